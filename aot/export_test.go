package aot

// ExportedName is exportedName, for the external tests.
var ExportedName = exportedName

// GoNames is goNames, for the external tests.
var GoNames = goNames

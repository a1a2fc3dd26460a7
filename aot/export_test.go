package aot

// ExportedName is exportedName, for the external tests.
var ExportedName = exportedName

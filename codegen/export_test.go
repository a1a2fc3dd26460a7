package codegen

// Exported for codegen_test, which imports the targets' Langs (an
// internal test cannot: they import codegen).
var (
	RenderX    = expr
	CheckPrims = checkPrims
	Prims      = &prims
)

package ir

// Exported for ir_test.
var (
	CheckKernelTable = checkKernelTable
	KernelTable      = &kernelTable
)

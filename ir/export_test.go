package ir

// Exported for ir_test.
var (
	CheckKernelTable = checkKernelTable
	KernelTable      = &kernelTable
)

// RecipRNFused is recipRNFused as a function, for xfast_test.go.
var RecipRNFused = &Func{Name: "recip_rn_fma", Params: 1, Body: recipRNFused(Arg(0))}

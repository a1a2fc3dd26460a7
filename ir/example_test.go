package ir_test

import (
	"errors"
	"fmt"

	"github.com/gpucc/gpucc/ir"
)

// The builder records operations on tensors; Build validates the graph
// under host limits and returns it in topological order.
func ExampleBuilder() {
	b := ir.NewBuilder()
	x := b.Input(ir.Shape{3}, []float32{1, 2, 3})
	w := b.Param("w", ir.Shape{3}, []float32{0.5, 0.5, 0.5})
	b.Output("y", x.Mul(w).AddScalar(1).Relu())
	g, err := b.Build(ir.DefaultLimits())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(g)
	// Output:
	// %0 = input (3 values) : [3]
	// %1 = input "w" param (3 values) : [3]
	// %2 = mul %0, %1 : [3]
	// %3 = add_scalar %2, 1 : [3]
	// %4 = relu %3 : [3]
	// out "y" = %4
}

// Every error gpucc reports carries a stable code; the codes are sentinels
// for errors.Is, and errors.As gives the node and field.
func ExampleCode() {
	b := ir.NewBuilder()
	x := b.Input(ir.Shape{2}, []float32{1, 2})
	b.Output("y", x.AddScalar(1).AddScalar(2))
	_, err := b.Build(ir.Limits{MaxNodes: 2})
	fmt.Println(errors.Is(err, ir.ErrLimitExceeded), errors.Is(err, ir.ErrInvalidGraph))
	var e *ir.Error
	if errors.As(err, &e) {
		fmt.Println(e.Code)
	}
	// Output:
	// true false
	// limit_exceeded
}

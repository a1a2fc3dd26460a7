package tune_test

import (
	"errors"

	"github.com/gpucc/gpucc/ir"
)

func asIR(err error, e **ir.Error) bool { return errors.As(err, e) }

package embed

import (
	"testing"
	"time"
)

// processCPU is 0 on Windows, which has no getrusage: only the benchmarks read it.
func processCPU(testing.TB) time.Duration { return 0 }

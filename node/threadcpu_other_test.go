//go:build !linux

package node

import "time"

// threadCPU is not measured here.
func threadCPU() time.Duration { return 0 }

package cpu_test

import (
	"testing"

	"github.com/ragen-go/ragen/engine/backend/backendtest"
	"github.com/ragen-go/ragen/engine/backend/cpu"
)

// The CPU backend against the naive float64 oracle: every op, a training
// step, a multi-turn decode.
func TestConformance(t *testing.T) { backendtest.Run(t, cpu.New()) }

package memory_test

import (
	"testing"

	"github.com/ferrygrid/ferry/dsi"
	"github.com/ferrygrid/ferry/dsi/dsitest"
	"github.com/ferrygrid/ferry/dsi/memory"
)

func TestConformance(t *testing.T) {
	dsitest.Run(t, func(t *testing.T) dsi.Storage { return memory.New() })
}

package memory_test

import (
	"testing"

	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/dynastore/memory"
	"github.com/redamo/redamo/dynastore/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) dynastore.Store {
		return memory.New(memory.Options{Observer: storetest.Observer(t)})
	})
}

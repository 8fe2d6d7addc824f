package commands

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/model"
)

func TestInlineLimits(t *testing.T) {
	with := func(f func(p *encodingParams)) encodingParams {
		p := defaultEncodingParams
		f(&p)
		return p
	}
	lim := func(entries, bytes int) model.InlineLimits { return model.InlineLimits{Entries: entries, Bytes: bytes} }
	cases := []struct {
		name            string
		params          encodingParams
		hash, set, list model.InlineLimits
	}{
		// Redis's defaults give redamo's caps.
		{"defaults", defaultEncodingParams, lim(64, 64), lim(128, 64), lim(128, 64)},
		{"lowered", with(func(p *encodingParams) {
			p.hashEntries, p.hashValue, p.setEntries, p.setValue, p.listSize = 3, 5, 7, 9, 11
		}), lim(3, 5), lim(7, 9), lim(11, 64)},
		{"raised past the caps", with(func(p *encodingParams) {
			p.hashEntries, p.hashValue, p.setEntries, p.setValue, p.listSize = 1<<40, 1<<40, 1<<40, 1<<40, 1<<30
		}), lim(64, 64), lim(128, 64), lim(128, 64)},
		{"zero", with(func(p *encodingParams) {
			p.hashEntries, p.hashValue, p.setEntries, p.setValue, p.listSize = 0, 0, 0, 0, 0
		}), lim(0, 0), lim(0, 0), lim(1, 64)},
		{"4 KB list nodes", with(func(p *encodingParams) { p.listSize = -1 }), lim(64, 64), lim(128, 64), lim(64, 64)},
		{"64 KB list nodes", with(func(p *encodingParams) { p.listSize = -5 }), lim(64, 64), lim(128, 64), lim(128, 64)},
		{"past the smallest list size", with(func(p *encodingParams) { p.listSize = -1 << 31 }), lim(64, 64), lim(128, 64), lim(128, 64)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &Server{}
			s.enc.Store(newEncodingState(tc.params))
			require.Equal(t, tc.hash, s.inline(model.TypeHash))
			require.Equal(t, tc.set, s.inline(model.TypeSet))
			require.Equal(t, tc.list, s.inline(model.TypeList))
		})
	}
	require.Equal(t, defaultEncoding, (&Server{}).encoding(), "an unset server has the defaults")
}

// A parameter set while another is being set keeps both.
func TestSetEncodingParamConcurrently(t *testing.T) {
	s := &Server{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := int64(0); i < 1000; i++ {
			s.setEncodingParam(func(p *encodingParams) *int64 { return &p.hashEntries }, i)
		}
	}()
	for i := int64(0); i < 1000; i++ {
		s.setEncodingParam(func(p *encodingParams) *int64 { return &p.zsetValue }, i)
	}
	<-done
	p := s.encoding().params
	require.EqualValues(t, 999, p.hashEntries)
	require.EqualValues(t, 999, p.zsetValue)
	require.EqualValues(t, 512, p.setIntsetEntries)
}

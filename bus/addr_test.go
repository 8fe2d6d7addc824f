package bus

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestListenFor(t *testing.T) {
	cases := []struct {
		resp, want string
		err        bool
	}{
		{resp: "127.0.0.1:6379", want: "127.0.0.1:16379"},
		{resp: ":6379", want: ":16379"},
		{resp: "[::1]:7000", want: "[::1]:17000"},
		{resp: "0.0.0.0:55535", want: "0.0.0.0:65535"},
		{resp: "0.0.0.0:55536", err: true},
		{resp: "127.0.0.1:0", err: true},
		{resp: "127.0.0.1", err: true},
	}
	for _, tc := range cases {
		t.Run(tc.resp, func(t *testing.T) {
			got, err := ListenFor(tc.resp)
			if tc.err {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

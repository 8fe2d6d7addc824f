package commands_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redamo/redamo/internal/testserver"
)

// The script holds redis-server 7.0.15's replies; it runs against both.
func TestConnectionScript(t *testing.T) {
	t.Run("redamo", func(t *testing.T) {
		testserver.RunScript(t, testserver.Start(t, nil).Addr, "testdata/connection.txt", false)
	})
	t.Run("redis-server", func(t *testing.T) {
		testserver.RunScript(t, testserver.RedisServer(t), "testdata/connection.txt", true)
	})
}

// go-redis connects with HELLO 3 (and AUTH in it when it has a password)
// then CLIENT SETINFO; both protocols and both password flows must work.
func TestGoRedisConnects(t *testing.T) {
	ctx := context.Background()
	for _, proto := range []int{2, 3} {
		for _, pass := range []string{"", "sekret"} {
			s := testserver.Start(t, nil, testserver.WithRequirePass(pass))
			rdb := s.Client(t, func(o *redis.Options) {
				o.Protocol, o.Password, o.ClientName = proto, pass, "app"
			})
			require.Equal(t, "PONG", rdb.Ping(ctx).Val(), "RESP%d pass %q", proto, pass)
			info := rdb.ClientInfo(ctx).Val()
			require.NotNil(t, info)
			require.Equal(t, "app", info.Name)
			require.Equal(t, proto, info.Resp)
			require.Equal(t, "go-redis", info.LibName[:min(8, len(info.LibName))])
			require.NoError(t, rdb.Do(ctx, "SELECT", 3).Err())
			require.Equal(t, "OK", rdb.Echo(ctx, "OK").Val())
			require.Equal(t, "default", info.User)
		}
	}
}

func TestWrongPasswordAndNoAuth(t *testing.T) {
	ctx := context.Background()
	s := testserver.Start(t, nil, testserver.WithRequirePass("sekret"))
	bad := s.Client(t, func(o *redis.Options) { o.Password = "nope" })
	require.EqualError(t, bad.Ping(ctx).Err(), "WRONGPASS invalid username-password pair or user is disabled.")
	none := s.Client(t, func(o *redis.Options) { o.Protocol = 2 })
	require.EqualError(t, none.Ping(ctx).Err(), "NOAUTH Authentication required.")
	require.NoError(t, none.Do(ctx, "AUTH", "sekret").Err())
	require.Equal(t, "PONG", none.Ping(ctx).Val())
}

// CONFIG SET requirepass applies to later AUTHs; connections already
// authenticated stay so, as in Redis.
func TestConfigSetRequirepass(t *testing.T) {
	ctx := context.Background()
	s := testserver.Start(t, nil)
	admin := s.Client(t, func(o *redis.Options) { o.PoolSize = 1 })
	require.Equal(t, "PONG", admin.Ping(ctx).Val())
	require.NoError(t, admin.ConfigSet(ctx, "requirepass", "new").Err())
	require.Equal(t, map[string]string{"requirepass": "new"}, admin.ConfigGet(ctx, "requirepass").Val())
	require.Equal(t, "PONG", admin.Ping(ctx).Val())

	late := s.Client(t, func(o *redis.Options) { o.Protocol = 2 })
	require.EqualError(t, late.Ping(ctx).Err(), "NOAUTH Authentication required.")
	withPass := s.Client(t, func(o *redis.Options) { o.Password = "new" })
	require.Equal(t, "PONG", withPass.Ping(ctx).Val())
}

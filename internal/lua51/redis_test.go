package lua51

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/redamo/redamo/compat"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
)

// TestCasesAgainstRedis checks the expectations of testdata/*.tsv
// against a real redis-server 7.0.15: a throwaway one, or the one
// REDAMO_LUA51_REDIS names (host:port).
func TestCasesAgainstRedis(t *testing.T) {
	addr := compat.ReferenceRedis(t, "REDAMO_LUA51_REDIS")
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	ctx := context.Background()
	for _, c := range readCases(t, "testdata/syntax.tsv") {
		got := "OK"
		if _, err := rdb.ScriptLoad(ctx, c.src).Result(); err != nil {
			got = strings.TrimPrefix(err.Error(), "ERR Error compiling script (new function): ")
		}
		assert.Equal(t, c.reply, got, "syntax.tsv:%d: %q", c.line, c.src)
	}
	place := regexp.MustCompile(` script: [0-9a-f]+, on @user_script:\d+\.$`)
	for _, c := range readCases(t, "testdata/runtime.tsv") {
		got := "OK"
		v, err := rdb.Eval(ctx, c.src, nil).Result()
		switch s, isString := v.(string); {
		case err != nil:
			got = place.ReplaceAllString(strings.TrimPrefix(err.Error(), "ERR "), "")
		case isString:
			got = s
		}
		assert.Equal(t, c.reply, got, "runtime.tsv:%d: %q", c.line, c.src)
	}
}

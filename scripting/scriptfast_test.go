package scripting

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/yuin/gopher-lua/parse"
)

// TestRecognizeCAS: which scripts come down to one conditional write.
func TestRecognizeCAS(t *testing.T) {
	del := func(missing, other int64) *casScript {
		return &casScript{act: casDelete, tok: 1, onMissing: missing, onOther: other}
	}
	for _, tc := range []struct {
		name string
		src  string
		want *casScript
	}{
		{"redsync release", `
	local val = redis.call("GET", KEYS[1])
	if val == ARGV[1] then
		return redis.call("DEL", KEYS[1])
	elseif val == false then
		return -1
	else
		return 0
	end`, del(-1, 0)},
		{"redsync extend", `
	if redis.call("GET", KEYS[1]) == ARGV[1] then
		return redis.call("PEXPIRE", KEYS[1], ARGV[2])
	else
		return 0
	end`, &casScript{act: casPExpire, tok: 1, ms: 2}},
		{"Redis docs release, one line", `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`, del(0, 0)},
		{"renamed, operands swapped, unlink", `local owner = redis.call('get', KEYS[1])
if ARGV[3] == owner then return redis.call('UNLINK', KEYS[1]) elseif false == owner then return 7 else return -2 end`,
			&casScript{act: casDelete, tok: 3, onMissing: 7, onOther: -2}},
		{"redsync extend with SET NX", `
	if redis.call("GET", KEYS[1]) == ARGV[1] then
		return redis.call("PEXPIRE", KEYS[1], ARGV[2])
	elseif redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2], "NX") then
		return 1
	else
		return 0
	end`, nil},
		{"another statement", `redis.call("INCR", "x") if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`, nil},
		{"pcall", `if redis.pcall("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`, nil},
		{"another key", `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[2]) else return 0 end`, nil},
		{"not equal", `if redis.call("get",KEYS[1]) ~= ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`, nil},
		{"a string reply", `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return "no" end`, nil},
		{"another command", `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("incr",KEYS[1]) else return 0 end`, nil},
		{"node-redlock acquire", `
  -- Return 0 if an entry already exists.
  for i, key in ipairs(KEYS) do
    if redis.call("exists", key) == 1 then
      return 0
    end
  end

  -- Create an entry for each provided key.
  for i, key in ipairs(KEYS) do
    redis.call("set", key, ARGV[1], "PX", ARGV[2])
  end

  -- Return the number of entries added.
  return #KEYS`, &casScript{act: casSetNXPX, tok: 1, ms: 2, perKey: true}},
		{"node-redlock extend", `
  for i, key in ipairs(KEYS) do
    if redis.call("get", key) ~= ARGV[1] then
      return 0
    end
  end
  for i, key in ipairs(KEYS) do
    redis.call("set", key, ARGV[1], "PX", ARGV[2])
  end
  return #KEYS`, &casScript{act: casSetPX, tok: 1, ms: 2, perKey: true}},
		{"node-redlock release", `
  local count = 0
  for i, key in ipairs(KEYS) do
    -- Only remove entries for *this* lock value.
    if redis.call("get", key) == ARGV[1] then
      redis.pcall("del", key)
      count = count + 1
    end
  end
  return count`, &casScript{act: casDelete, tok: 1, perKey: true}},
		{"extend setting another value", `for _, k in ipairs(KEYS) do if redis.call("get", k) ~= ARGV[1] then return 0 end end
for _, k in ipairs(KEYS) do redis.call("set", k, ARGV[3], "PX", ARGV[2]) end
return #KEYS`, nil},
		{"release counting by two", `local n = 0 for _, k in ipairs(KEYS) do if redis.call("get", k) == ARGV[1] then redis.pcall("del", k) n = n + 2 end end return n`, nil},
		{"Redisson RLock renewal", `if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then redis.call('pexpire', KEYS[1], ARGV[1]); return 1; end; return 0;`,
			&casScript{act: casHashPExpire, tok: 2, ms: 1, onHit: 1}},
		{"renewal, reindented and swapped", "if 1 == redis.call('HEXISTS', KEYS[1], ARGV[1])\nthen\n  redis.call('PEXPIRE', KEYS[1], ARGV[3])\n  return 7\nend\nreturn -1",
			&casScript{act: casHashPExpire, tok: 1, ms: 3, onHit: 7, onMissing: -1, onOther: -1}},
		{"renewal of another key", `if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then redis.call('pexpire', KEYS[2], ARGV[1]); return 1; end; return 0;`, nil},
		{"renewal testing 0", `if (redis.call('hexists', KEYS[1], ARGV[2]) == 0) then redis.call('pexpire', KEYS[1], ARGV[1]); return 1; end; return 0;`, nil},
		{"Redisson RLock acquire", `if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);`,
			&casScript{act: casHashLock, tok: 2, ms: 1}},
		{"acquire incrementing another field", `if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then redis.call('hincrby', KEYS[1], ARGV[3], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);`, nil},
		{"acquire returning 1", `if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return 1; end; return redis.call('pttl', KEYS[1]);`, nil},
		{"Redisson RLock release", `if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil;end; local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); return 0; else redis.call('del', KEYS[1]); redis.call('publish', KEYS[2], ARGV[1]); return 1; end; return nil;`,
			&casScript{act: casHashUnlock, tok: 3, ms: 2, onHit: 1}},
		{"release without publish", `if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then return nil end local n = redis.call('hincrby', KEYS[1], ARGV[1], -1) if n > 0 then redis.call('pexpire', KEYS[1], ARGV[2]) return 5 else redis.call('del', KEYS[1]) return 6 end return nil`,
			&casScript{act: casHashUnlock, tok: 1, ms: 2, onHit: 6, onOther: 5}},
		{"release decrementing by two", `if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil;end; local counter = redis.call('hincrby', KEYS[1], ARGV[3], -2); if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); return 0; else redis.call('del', KEYS[1]); return 1; end; return nil;`, nil},
		{"acquire over ARGV", `for _, k in ipairs(ARGV) do if redis.call("exists", k) == 1 then return 0 end end
for _, k in ipairs(KEYS) do redis.call("set", k, ARGV[1], "PX", ARGV[2]) end
return #KEYS`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			chunk, err := parse.Parse(strings.NewReader(tc.src), chunkName)
			require.NoError(t, err)
			require.Equal(t, tc.want, recognizeCAS(chunk))
		})
	}
}

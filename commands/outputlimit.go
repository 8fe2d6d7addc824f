package commands

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// client-output-buffer-limit: how much output a client may leave unread,
// per class. redamo applies the pubsub class's to subscribers (resp closes
// one whose undelivered messages pass them). It has no replicas, and a
// normal client is answered as its requests are read, so those classes
// keep Redis's defaults and CONFIG SET may not change them.

// OutputLimit is one class's limits: a client is closed once its pending
// output passes Hard, or stays above Soft for longer than SoftFor. Zero
// bytes is no limit.
type OutputLimit struct {
	Hard, Soft uint64
	SoftFor    time.Duration
}

// Redis's defaults.
var (
	DefaultPubSubOutputLimit = OutputLimit{Hard: 32 << 20, Soft: 8 << 20, SoftFor: 60 * time.Second}
	normalOutputLimit        = OutputLimit{}
	replicaOutputLimit       = OutputLimit{Hard: 256 << 20, Soft: 64 << 20, SoftFor: 60 * time.Second}
)

// PubSubOutputLimit is the pubsub class's limits.
func (s *Server) PubSubOutputLimit() OutputLimit {
	if l := s.pubsubLimit.Load(); l != nil {
		return *l
	}
	return DefaultPubSubOutputLimit
}

func (l OutputLimit) String() string {
	return fmt.Sprintf("%d %d %d", l.Hard, l.Soft, int64(l.SoftFor/time.Second))
}

// outputLimitsValue is CONFIG GET's value, Redis's classes in its order.
func outputLimitsValue(s *Server) string {
	return "normal " + normalOutputLimit.String() + " slave " + replicaOutputLimit.String() + " pubsub " + s.PubSubOutputLimit().String()
}

// parseOutputLimits reads a CONFIG SET value as Redis's
// setConfigClientOutputBufferLimitOption does: groups of class, hard,
// soft and soft seconds. pubsub is the pubsub class's last group (nil:
// none); why is the reason for refusing the value.
func parseOutputLimits(v string) (pubsub *OutputLimit, why string) {
	args := strings.Fields(v)
	if len(args)%4 != 0 {
		return nil, MsgConfigWhyBufferArgs
	}
	for i := 0; i < len(args); i += 4 {
		var fixed *OutputLimit
		switch strings.ToLower(args[i]) {
		case "normal":
			fixed = &normalOutputLimit
		case "slave", "replica":
			fixed = &replicaOutputLimit
		case "pubsub":
		default:
			return nil, MsgConfigWhyBufferClass
		}
		hard, ok1 := memToBytes(args[i+1])
		soft, ok2 := memToBytes(args[i+2])
		secs, err := strconv.ParseInt(args[i+3], 10, 64)
		if !ok1 || !ok2 || err != nil || secs < 0 {
			return nil, MsgConfigWhyBufferValues
		}
		l := OutputLimit{Hard: hard, Soft: soft, SoftFor: time.Duration(min(secs, int64(1<<63-1)/int64(time.Second))) * time.Second}
		switch {
		case fixed == nil:
			pubsub = &l
		case l != *fixed:
			return nil, MsgConfigWhyUnsupported
		}
	}
	return pubsub, ""
}

func checkOutputLimits(v string) string {
	_, why := parseOutputLimits(v)
	return why
}

func setOutputLimits(s *Server, v string) {
	if l, _ := parseOutputLimits(v); l != nil {
		s.pubsubLimit.Store(l)
	}
}

package commands

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/redamo/redamo/coord"
	"github.com/redamo/redamo/model"
)

// Reply strings, exactly as Redis 7 sends them. Every error reply a handler
// writes comes from here (or from the err* builders below).
const (
	MsgSyntax = "ERR syntax error"
	// MsgProtectedMode is sent, as Redis does, to a client refused by protected mode.
	MsgProtectedMode = "DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Setup a an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside."
	MsgWrongType     = "WRONGTYPE Operation against a key holding the wrong kind of value"
	MsgNotInt        = "ERR value is not an integer or out of range"
	MsgNotFloat      = "ERR value is not a valid float"
	MsgOverflow      = "ERR increment or decrement would overflow"
	MsgIncrFloatNaN  = "ERR increment would produce NaN or Infinity"
	MsgNoSuchKey     = "ERR no such key"
	MsgOutOfRange    = "ERR index out of range"
	MsgInvalidExpire = "ERR invalid expire time in '%s' command"
	MsgInvalidDB     = "ERR DB index is out of range"
	MsgNoAuth        = "NOAUTH Authentication required."
	MsgWrongPass     = "WRONGPASS invalid username-password pair or user is disabled."
	MsgAuthNotSet    = "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"
	MsgStringTooLong = "ERR string exceeds maximum allowed size (proto-max-bulk-len)"
	MsgValueTooLarge = "ERR value exceeds the DynamoDB item size limit (400 KB)"
	MsgKeyTooLong    = "ERR key exceeds the DynamoDB partition key limit (2046 bytes)"
	MsgTxTooLarge    = "ERR operation exceeds the DynamoDB transaction limit (100 items, 4 MB)"
	MsgTryAgain      = "TRYAGAIN DynamoDB is throttling requests, try again later"
	MsgUnavailable   = "ERR DynamoDB is unavailable, try again later"
	// MsgScanTooLong ends a whole-table scan (DBSIZE, KEYS, FLUSHDB,
	// FLUSHALL) that outlasted model.DefaultScanAllBound.
	MsgScanTooLong = "ERR the table scan did not finish within 10 minutes: the table is too big for this command"
	MsgConflict    = "TRYAGAIN concurrent update conflict, try again"
	// MsgOutcomeUnknown is not TRYAGAIN, which cluster clients retry on
	// their own: repeating a write that may have been applied (an INCR, a
	// push) is the client's decision.
	MsgOutcomeUnknown  = "ERR DynamoDB did not confirm the write; it may or may not have been applied"
	MsgOffsetRange     = "ERR offset is out of range"
	MsgBitOffset       = "ERR bit offset is not an integer or out of range"
	MsgNegativeTimeout = "ERR timeout is negative"
	MsgTimeoutNotFloat = "ERR timeout is not a float or out of range"
	MsgTimeoutNotInt   = "ERR timeout is not an integer or out of range"
	MsgCountPositive   = "ERR value is out of range, must be positive"
	MsgSameObject      = "ERR source and destination objects are the same"
	MsgNXXXGTLT        = "ERR NX and XX, GT or LT options at the same time are not compatible"
	MsgGTLTNX          = "ERR GT, LT, and/or NX options at the same time are not compatible"
	MsgGTAndLT         = "ERR GT and LT options at the same time are not compatible"
	MsgDecrOverflow    = "ERR decrement would overflow"
	MsgInvalidCursor   = "ERR invalid cursor"
	MsgIntOutOfRange   = "ERR value is out of range"
	MsgNotInt32        = "ERR value is out of range, value must between -2147483648 and 2147483647"
	MsgLFUNotSelected  = "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."
	MsgNumkeys         = "ERR numkeys should be greater than 0"
	MsgNumkeysArgs     = "ERR Number of keys can't be greater than number of args"
	MsgLimitNegative   = "ERR LIMIT can't be negative"
	MsgRandCountRange  = "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"
	MsgHashNotInt      = "ERR hash value is not an integer"
	MsgHashNotFloat    = "ERR hash value is not a float"
	MsgNaNOrInf        = "ERR value is NaN or Infinity"
	// Sorted sets.
	MsgZNaN         = "ERR resulting score is not a number (NaN)"
	MsgZRangeFloat  = "ERR min or max is not a float"
	MsgZRangeLex    = "ERR min or max not valid string range item"
	MsgZXXNX        = "ERR XX and NX options at the same time are not compatible"
	MsgZIncrPair    = "ERR INCR option supports a single increment-element pair"
	MsgZLimitRank   = "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"
	MsgZScoresLex   = "ERR syntax error, WITHSCORES not supported in combination with BYLEX"
	MsgZWeightFloat = "ERR weight value is not a float"
	MsgZNeedsOneKey = "ERR at least 1 input key is needed for '%s' command"
	// GEO commands.
	MsgGeoUnit      = "ERR unsupported unit provided. please use M, KM, FT, MI"
	MsgGeoRadius    = "ERR need numeric radius"
	MsgGeoWidth     = "ERR need numeric width"
	MsgGeoHeight    = "ERR need numeric height"
	MsgGeoNegRadius = "ERR radius cannot be negative"
	MsgGeoNegBox    = "ERR height or width cannot be negative"
	MsgGeoMember    = "ERR could not decode requested zset member"
	MsgGeoCount     = "ERR COUNT must be > 0"
	MsgGeoAnyCount  = "ERR the ANY argument requires COUNT argument"
	MsgGeoStoreWith = "ERR %s is not compatible with WITHDIST, WITHHASH and WITHCOORD options"
	MsgGeoFrom      = "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for %s"
	MsgGeoBy        = "ERR exactly one of BYRADIUS and BYBOX can be specified for %s"
	// Connection and server commands.
	MsgHelloNoAuth      = "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"
	MsgNoProto          = "NOPROTO unsupported protocol version"
	MsgProtoNotInt      = "ERR Protocol version is not an integer or out of range"
	MsgHelloOption      = "ERR Syntax error in HELLO option '%s'"
	MsgClientName       = "ERR Client names cannot contain spaces, newlines or special characters."
	MsgSetinfoOption    = "ERR Unrecognized option '%s'"
	MsgSetinfoValue     = "ERR %s cannot contain spaces, newlines or special characters."
	MsgNoSuchClient     = "ERR No such client"
	MsgClientIDRange    = "ERR client-id should be greater than 0"
	MsgInvalidClientID  = "ERR Invalid client ID"
	MsgClientType       = "ERR Unknown client type '%s'"
	MsgNoSuchUser       = "ERR No such user '%s'"
	MsgMaxClients       = "ERR max number of clients reached"
	MsgGetkeysCommand   = "ERR Invalid command specified"
	MsgGetkeysNoKeys    = "ERR The command has no key arguments"
	MsgGetkeysArity     = "ERR Invalid number of arguments specified for command"
	MsgGetkeysArgs      = "ERR Invalid arguments specified for command"
	MsgNoConfigFile     = "ERR The server is running without a config file"
	MsgConfigSetFailed  = "ERR CONFIG SET failed (possibly related to argument '%s') - %s"
	MsgConfigSetUnknown = "ERR Unknown option or number of arguments for CONFIG SET - '%s'"
	// CONFIG SET's reasons, which MsgConfigSetFailed wraps; the last is
	// redamo's own, for a parameter it cannot honour.
	MsgConfigWhyImmutable      = "can't set immutable config"
	MsgConfigWhyProtected      = "can't set protected config"
	MsgConfigWhyDuplicate      = "duplicate parameter"
	MsgConfigWhyNotInt         = "argument couldn't be parsed into an integer"
	MsgConfigWhyNotMemory      = "argument must be a memory value"
	MsgConfigWhyRange          = "argument must be between %d and %d inclusive"
	MsgConfigWhyNotYesNo       = "argument must be 'yes' or 'no'"
	MsgConfigWhyKeyspaceEvents = "Invalid event class character. Use 'Ag$lshzxeKEtmdn'."
	MsgConfigWhyBufferArgs     = "Wrong number of arguments in buffer limit configuration."
	MsgConfigWhyBufferClass    = "Invalid client class specified in buffer limit configuration."
	MsgConfigWhyBufferValues   = "Error in hard, soft or soft_seconds setting in buffer limit configuration."
	MsgConfigWhyUnsupported    = "redamo does not support changing it"
	// CL.THROTTLE's, as redis-cell (a Redis module written in Rust) words
	// them: its errors are "Cell error: " and the error's text, "Store
	// error: ..." for its own. MsgCellBadTAT is what it reports for a
	// stored value that is not a u64 when it compares one (where it reads
	// one, it crashes instead): Rust's ParseIntError text.
	MsgCellUsage    = "Cell error: Store error: Usage: cl.throttle <key> <max_burst> <count per period> <period> [<quantity>]"
	MsgCellNotInt   = "Cell error: Store error: Couldn't parse as integer: %s"
	MsgCellZeroRate = "Cell error: Store error: Zero rates are not supported"
	MsgCellExpire   = "Cell error: Store error: Error while setting key expire"
	MsgCellBadTAT   = "Cell error: %s"
	// DUMP and RESTORE.
	MsgBusyKey        = "BUSYKEY Target key name already exists."
	MsgRestoreTTL     = "ERR Invalid TTL value, must be >= 0"
	MsgRestoreIdle    = "ERR Invalid IDLETIME value, must be >= 0"
	MsgRestoreFreq    = "ERR Invalid FREQ value, must be >= 0 and <= 255"
	MsgRestorePayload = "ERR DUMP payload version or checksum are wrong"
	MsgRestoreFormat  = "ERR Bad data format"
	// redamo's own: a handler that panicked or broke the one-reply rule.
	MsgInternalError  = "ERR internal error in '%s'"
	MsgMalformedReply = "ERR internal error in '%s': malformed reply"
)

// ErrWrongArgs is Redis's arity error for a command (name as Redis prints it,
// lower case, "parent|sub" for a subcommand).
func ErrWrongArgs(cmd string) string {
	return fmt.Sprintf("ERR wrong number of arguments for '%s' command", strings.ToLower(cmd))
}

// ErrUnknownCommand is Redis's reply to an unknown command: the name and the
// first arguments, each quoted and cut as Redis does.
func ErrUnknownCommand(name string, args [][]byte) string {
	var b []byte
	for _, a := range args {
		if len(b) >= 128 {
			break
		}
		max := 128 - len(b)
		b = append(b, '\'')
		b = append(b, cPrefix([]byte(a), max)...)
		b = append(b, '\'', ' ')
	}
	return "ERR unknown command '" + string(cPrefix([]byte(name), 128)) + "', with args beginning with: " + string(b)
}

// ErrUnknownSubcommand is Redis's reply to an unknown subcommand.
func ErrUnknownSubcommand(cmd, sub string) string {
	return "ERR unknown subcommand '" + string(cPrefix([]byte(sub), 128)) + "'. Try " + strings.ToUpper(cmd) + " HELP."
}

// ErrSubcommandSyntax is Redis's reply to a subcommand given the wrong
// arguments where the subcommand checks them itself.
func ErrSubcommandSyntax(cmd, sub string) string {
	return "ERR unknown subcommand or wrong number of arguments for '" + string(cPrefix([]byte(sub), 128)) +
		"'. Try " + strings.ToUpper(cmd) + " HELP."
}

// cPrefix is an argument as Redis prints it with "%.<n>s": up to its first
// NUL byte and at most n bytes (bytes, not runes).
func cPrefix(b []byte, n int) []byte {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	if len(b) > n {
		b = b[:n]
	}
	return b
}

// ErrorMsg maps an error that ended a command to the Redis error reply a
// client gets: a reply the command decided on (a redisError: WRONGTYPE, not
// an integer, ...), or a storage failure. It is the one place where errors
// become wire errors.
func ErrorMsg(err error) string {
	var re redisError
	switch {
	case errors.As(err, &re):
		return string(re)
	case errors.Is(err, model.ErrWrongType):
		return MsgWrongType
	case errors.Is(err, model.ErrNotInteger):
		return MsgNotInt
	case errors.Is(err, model.ErrOverflow):
		return MsgOverflow
	case errors.Is(err, model.ErrStringTooLong):
		return MsgStringTooLong
	case errors.Is(err, coord.ErrNotOwner):
		return MsgNotOwner
	case errors.Is(err, coord.ErrBadReceipt):
		return MsgBadReceipt
	case errors.Is(err, coord.ErrSameQueue):
		return MsgSameQueueDLQ
	case errors.Is(err, coord.ErrNameTooLong):
		return MsgNameTooLong
	case errors.Is(err, model.ErrItemTooLarge):
		return MsgValueTooLarge
	case errors.Is(err, model.ErrKeyTooLarge):
		return MsgKeyTooLong
	case errors.Is(err, model.ErrTxTooLarge):
		return MsgTxTooLarge
	case errors.Is(err, model.ErrOutcomeUnknown):
		// Before the kinds it comes with: "try again" would be wrong.
		return MsgOutcomeUnknown
	case errors.Is(err, model.ErrThrottled):
		return MsgTryAgain
	case errors.Is(err, model.ErrTxConflict):
		return MsgConflict
	case errors.Is(err, model.ErrScanTooLong):
		return MsgScanTooLong
	case errors.Is(err, model.ErrUnavailable):
		return MsgUnavailable
	default:
		return "ERR " + err.Error()
	}
}

// Fail replies with the Redis error for err (ErrorMsg).
func (c *Ctx) Fail(err error) {
	c.W.Error(ErrorMsg(err))
}

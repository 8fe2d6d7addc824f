package commands

import (
	"crypto/subtle"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The connection family: PING, ECHO, QUIT, RESET, SELECT, AUTH, HELLO and
// CLIENT. Metadata as Redis 7.0.15's COMMAND INFO/DOCS report it (CLIENT
// SETINFO as Redis 7.2 does: clients send it on connect).
func registerConnection(t *Table) {
	conn := []string{"fast", "connection"}
	t.Register(
		&Command{
			Name: "ping", Arity: -1, Flags: []string{FlagFast}, Categories: conn,
			Tips:    []string{"request_policy:all_shards", "response_policy:all_succeeded"},
			Summary: "Ping the server", Since: "1.0.0", Group: "connection", Complexity: "O(1)",
			Args: []Arg{{Name: "message", Type: "string", KeySpecIndex: -1, Flags: []string{"optional"}}},
			Run:  cmdPing,
		},
		&Command{
			Name: "echo", Arity: 2, Flags: []string{FlagLoading, FlagStale, FlagFast}, Categories: conn,
			Summary: "Echo the given string", Since: "1.0.0", Group: "connection", Complexity: "O(1)",
			Args: []Arg{{Name: "message", Type: "string", KeySpecIndex: -1}},
			Run:  cmdEcho,
		},
		&Command{
			Name: "quit", Arity: -1, Flags: connFlags(), Categories: conn,
			Summary: "Close the connection", Since: "1.0.0", Group: "connection", Complexity: "O(1)",
			Run: cmdQuit,
		},
		&Command{
			Name: "reset", Arity: 1, Flags: connFlags(), Categories: conn,
			Summary: "Reset the connection", Since: "6.2.0", Group: "connection", Complexity: "O(1)",
			Run: cmdReset,
		},
		&Command{
			Name: "select", Arity: 2, Flags: []string{FlagLoading, FlagStale, FlagFast}, Categories: conn,
			Summary: "Change the selected database for the current connection", Since: "1.0.0",
			Group: "connection", Complexity: "O(1)",
			Args: []Arg{{Name: "index", Type: "integer", KeySpecIndex: -1}},
			Run:  cmdSelect,
		},
		&Command{
			Name: "auth", Arity: -2, Flags: connFlags(), Categories: conn,
			Summary: "Authenticate to the server", Since: "1.0.0", Group: "connection",
			Complexity: "O(N) where N is the number of passwords defined for the user",
			History:    [][2]string{{"6.0.0", "Added ACL style (username and password)."}},
			Args: []Arg{
				{Name: "username", Type: "string", KeySpecIndex: -1, Since: "6.0.0", Flags: []string{"optional"}},
				{Name: "password", Type: "string", KeySpecIndex: -1},
			},
			Run: cmdAuth,
		},
		&Command{
			Name: "hello", Arity: -1, Flags: connFlags(), Categories: conn,
			Summary: "Handshake with Redis", Since: "6.0.0", Group: "connection", Complexity: "O(1)",
			History: [][2]string{{"6.2.0", "`protover` made optional; when called without arguments the command reports the current connection's context."}},
			Args: []Arg{{Name: "arguments", Type: "block", KeySpecIndex: -1, Flags: []string{"optional"}, Args: []Arg{
				{Name: "protover", Type: "integer", KeySpecIndex: -1},
				{Name: "username_password", Type: "block", KeySpecIndex: -1, Token: "AUTH", Flags: []string{"optional"}, Args: []Arg{
					{Name: "username", Type: "string", KeySpecIndex: -1},
					{Name: "password", Type: "string", KeySpecIndex: -1},
				}},
				{Name: "clientname", Type: "string", KeySpecIndex: -1, Token: "SETNAME", Flags: []string{"optional"}},
			}}},
			Run: cmdHello,
		},
		clientCommand(),
	)
}

// connFlags are the flags of the commands a client may send before AUTH.
func connFlags() []string {
	return []string{FlagNoScript, FlagLoading, FlagStale, FlagFast, FlagNoAuth, FlagAllowBusy}
}

// protoSwitcher is implemented by writers whose protocol follows the
// connection's (HELLO, RESET): the reply to HELLO 3 is already RESP3.
type protoSwitcher interface {
	SetProto(p int)
}

func setProto(c *Ctx, p int) {
	c.Conn.Proto = p
	if w, ok := c.W.(protoSwitcher); ok {
		w.SetProto(p)
	}
}

func cmdPing(c *Ctx) {
	switch len(c.Args) {
	case 1:
		c.W.Simple("PONG")
	case 2:
		c.W.Bulk(c.Args[1])
	default:
		c.W.Error(ErrWrongArgs("ping"))
	}
}

func cmdEcho(c *Ctx) { c.W.Bulk(c.Args[1]) }

func cmdQuit(c *Ctx) {
	c.Conn.CloseAfterReply = true
	c.W.Simple("OK")
}

// cmdReset returns the connection to its state right after connecting.
func cmdReset(c *Ctx) {
	c.Conn.discardTx()
	c.Conn.DB = 0
	c.Conn.SetName("")
	c.Conn.Authed = c.Srv.RequirePass() == ""
	setProto(c, 2)
	c.W.Simple("RESET")
}

func cmdSelect(c *Ctx) {
	n, ok := string2ll(c.Args[1])
	if !ok {
		c.W.Error(MsgNotInt)
		return
	}
	if n < math.MinInt32 || n > math.MaxInt32 {
		c.W.Error(MsgNotInt32)
		return
	}
	if n < 0 || n >= NumDBs {
		c.W.Error(MsgInvalidDB)
		return
	}
	c.Conn.DB = int(n)
	c.W.Simple("OK")
}

// checkPassword authenticates user/pass against the one "default" user.
// Without requirepass the default user has no password: any password
// works, as with Redis's "nopass" default user.
func checkPassword(c *Ctx, user, pass []byte) bool {
	if string(user) != "default" {
		return false
	}
	want := c.Srv.RequirePass()
	if want == "" {
		return true
	}
	return subtle.ConstantTimeCompare([]byte(want), pass) == 1
}

func cmdAuth(c *Ctx) {
	var user, pass []byte
	switch len(c.Args) {
	case 2:
		if c.Srv.RequirePass() == "" {
			c.W.Error(MsgAuthNotSet)
			return
		}
		user, pass = []byte("default"), c.Args[1]
	case 3:
		user, pass = c.Args[1], c.Args[2]
	default:
		c.W.Error(MsgSyntax)
		return
	}
	if !checkPassword(c, user, pass) {
		c.W.Error(MsgWrongPass)
		return
	}
	c.Conn.Authed = true
	c.W.Simple("OK")
}

func cmdHello(c *Ctx) {
	ver := int64(0)
	next := 1
	if len(c.Args) >= 2 {
		v, ok := string2ll(c.Args[1])
		if !ok {
			c.W.Error(MsgProtoNotInt)
			return
		}
		if v < 2 || v > 3 {
			c.W.Error(MsgNoProto)
			return
		}
		ver, next = v, 2
	}
	var user, pass, name []byte
	setName := false
	for j := next; j < len(c.Args); j++ {
		more := len(c.Args) - 1 - j
		opt := c.Args[j]
		switch {
		case strings.EqualFold(string(opt), "AUTH") && more >= 2:
			user, pass = c.Args[j+1], c.Args[j+2]
			j += 2
		case strings.EqualFold(string(opt), "SETNAME") && more >= 1:
			name, setName = c.Args[j+1], true
			if !validClientName(name) {
				c.W.Error(MsgClientName)
				return
			}
			j++
		default:
			c.W.Error(fmt.Sprintf(MsgHelloOption, opt))
			return
		}
	}
	if user != nil {
		if !checkPassword(c, user, pass) {
			c.W.Error(MsgWrongPass)
			return
		}
		c.Conn.Authed = true
	}
	if c.Srv.AuthRequired(c.Conn) {
		c.W.Error(MsgHelloNoAuth)
		return
	}
	if setName {
		c.Conn.SetName(string(name))
	}
	if ver != 0 {
		setProto(c, int(ver))
	}
	c.W.Map(7)
	c.W.BulkString("server")
	c.W.BulkString("redis")
	c.W.BulkString("version")
	c.W.BulkString(Version)
	c.W.BulkString("proto")
	c.W.Int(int64(c.Conn.Proto))
	c.W.BulkString("id")
	c.W.Int(c.Conn.ID)
	c.W.BulkString("mode")
	c.W.BulkString("standalone")
	c.W.BulkString("role")
	c.W.BulkString("master")
	c.W.BulkString("modules")
	c.W.Array(0)
}

// validClientName is Redis's rule for client names and library attributes:
// printable ASCII without spaces.
func validClientName(b []byte) bool {
	for _, ch := range b {
		if ch < '!' || ch > '~' {
			return false
		}
	}
	return true
}

// ---- CLIENT ------------------------------------------------------------------

func clientCommand() *Command {
	conn := []string{"slow", "connection"}
	admin := []string{"admin", "slow", "dangerous", "connection"}
	sub := func(c *Command) *Command {
		c.Group = "connection"
		if c.Complexity == "" {
			c.Complexity = "O(1)"
		}
		return c
	}
	plain := []string{FlagNoScript, FlagLoading, FlagStale}
	adminFlags := []string{FlagAdmin, FlagNoScript, FlagLoading, FlagStale}
	return &Command{
		Name: "client", Arity: -2, Categories: []string{"slow"},
		Summary: "A container for client connection commands", Since: "2.4.0", Group: "connection",
		Complexity: "Depends on subcommand.",
		Subcommands: []*Command{
			sub(&Command{
				Name: "client|getname", Arity: 2, Flags: plain, Categories: conn,
				Summary: "Get the current connection name", Since: "2.6.9", Run: cmdClientGetname,
			}),
			sub(&Command{
				Name: "client|help", Arity: 2, Flags: []string{FlagLoading, FlagStale}, Categories: conn,
				Summary: "Show helpful text about the different subcommands", Since: "5.0.0", Run: cmdClientHelp,
			}),
			sub(&Command{
				Name: "client|id", Arity: 2, Flags: plain, Categories: conn,
				Summary: "Returns the client ID for the current connection", Since: "5.0.0", Run: cmdClientID,
			}),
			sub(&Command{
				Name: "client|info", Arity: 2, Flags: plain, Categories: conn,
				Tips:    []string{"nondeterministic_output"},
				Summary: "Returns information about the current client connection.", Since: "6.2.0", Run: cmdClientInfo,
			}),
			sub(&Command{
				Name: "client|kill", Arity: -3, Flags: adminFlags, Categories: admin,
				Summary: "Kill the connection of a client", Since: "2.4.0",
				Complexity: "O(N) where N is the number of client connections",
				History: [][2]string{
					{"2.8.12", "Added new filter format."},
					{"2.8.12", "`ID` option."},
					{"3.2.0", "Added `master` type in for `TYPE` option."},
					{"5.0.0", "Replaced `slave` `TYPE` with `replica`. `slave` still supported for backward compatibility."},
					{"6.2.0", "`LADDR` option."},
				},
				Args: []Arg{{Name: "filter", Type: "oneof", KeySpecIndex: -1, Args: []Arg{
					{Name: "ip:port", Type: "string", KeySpecIndex: -1, DeprecatedSince: "2.8.12"},
					{Name: "new-format", Type: "oneof", KeySpecIndex: -1, Flags: []string{"multiple"}, Args: []Arg{
						{Name: "client-id", Type: "integer", KeySpecIndex: -1, Token: "ID", Since: "2.8.12", Flags: []string{"optional"}},
						{Name: "normal_master_slave_pubsub", Type: "oneof", KeySpecIndex: -1, Token: "TYPE", Since: "2.8.12", Flags: []string{"optional"}, Args: []Arg{
							{Name: "normal", Type: "pure-token", KeySpecIndex: -1, Token: "NORMAL"},
							{Name: "master", Type: "pure-token", KeySpecIndex: -1, Token: "MASTER", Since: "3.2.0"},
							{Name: "slave", Type: "pure-token", KeySpecIndex: -1, Token: "SLAVE"},
							{Name: "replica", Type: "pure-token", KeySpecIndex: -1, Token: "REPLICA", Since: "5.0.0"},
							{Name: "pubsub", Type: "pure-token", KeySpecIndex: -1, Token: "PUBSUB"},
						}},
						{Name: "username", Type: "string", KeySpecIndex: -1, Token: "USER", Flags: []string{"optional"}},
						{Name: "ip:port", Type: "string", KeySpecIndex: -1, Token: "ADDR", Flags: []string{"optional"}},
						{Name: "ip:port", Type: "string", KeySpecIndex: -1, Token: "LADDR", Since: "6.2.0", Flags: []string{"optional"}},
						{Name: "yes/no", Type: "string", KeySpecIndex: -1, Token: "SKIPME", Flags: []string{"optional"}},
					}},
				}}},
				Run: cmdClientKill,
			}),
			sub(&Command{
				Name: "client|list", Arity: -2, Flags: adminFlags, Categories: admin,
				Tips:    []string{"nondeterministic_output"},
				Summary: "Get the list of client connections", Since: "2.4.0",
				Complexity: "O(N) where N is the number of client connections",
				History: [][2]string{
					{"2.8.12", "Added unique client `id` field."},
					{"5.0.0", "Added optional `TYPE` filter."},
					{"6.0.0", "Added `user` field."},
					{"6.2.0", "Added `argv-mem`, `tot-mem`, `laddr` and `redir` fields and the optional `ID` filter."},
					{"7.0.0", "Added `resp`, `multi-mem`, `rbs` and `rbp` fields."},
					{"7.0.3", "Added `ssub` field."},
				},
				Args: []Arg{
					{Name: "normal_master_replica_pubsub", Type: "oneof", KeySpecIndex: -1, Token: "TYPE", Since: "5.0.0", Flags: []string{"optional"}, Args: []Arg{
						{Name: "normal", Type: "pure-token", KeySpecIndex: -1, Token: "NORMAL"},
						{Name: "master", Type: "pure-token", KeySpecIndex: -1, Token: "MASTER"},
						{Name: "replica", Type: "pure-token", KeySpecIndex: -1, Token: "REPLICA"},
						{Name: "pubsub", Type: "pure-token", KeySpecIndex: -1, Token: "PUBSUB"},
					}},
					{Name: "id", Type: "block", KeySpecIndex: -1, Token: "ID", Since: "6.2.0", Flags: []string{"optional"}, Args: []Arg{
						{Name: "client-id", Type: "integer", KeySpecIndex: -1, Flags: []string{"multiple"}},
					}},
				},
				Run: cmdClientList,
			}),
			sub(&Command{
				Name: "client|setinfo", Arity: 4, Flags: plain, Categories: conn,
				Summary: "Set client or connection specific info", Since: "7.2.0",
				Args: []Arg{{Name: "attr", Type: "oneof", KeySpecIndex: -1, Args: []Arg{
					{Name: "libname", Type: "string", KeySpecIndex: -1, Token: "LIB-NAME"},
					{Name: "libver", Type: "string", KeySpecIndex: -1, Token: "LIB-VER"},
				}}},
				Run: cmdClientSetinfo,
			}),
			sub(&Command{
				Name: "client|setname", Arity: 3, Flags: plain, Categories: conn,
				Summary: "Set the current connection name", Since: "2.6.9",
				Args: []Arg{{Name: "connection-name", Type: "string", KeySpecIndex: -1}},
				Run:  cmdClientSetname,
			}),
		},
	}
}

func cmdClientID(c *Ctx) { c.W.Int(c.Conn.ID) }

func cmdClientGetname(c *Ctx) {
	if n := c.Conn.Name(); n != "" {
		c.W.BulkString(n)
		return
	}
	c.W.Nil()
}

func cmdClientSetname(c *Ctx) {
	if !validClientName(c.Args[2]) {
		c.W.Error(MsgClientName)
		return
	}
	c.Conn.SetName(string(c.Args[2]))
	c.W.Simple("OK")
}

func cmdClientSetinfo(c *Ctx) {
	attr, val := c.Args[2], c.Args[3]
	lower := strings.ToLower(string(attr))
	if lower != "lib-name" && lower != "lib-ver" {
		c.W.Error(fmt.Sprintf(MsgSetinfoOption, attr))
		return
	}
	if !validClientName(val) {
		c.W.Error(fmt.Sprintf(MsgSetinfoValue, attr))
		return
	}
	c.Conn.setLibAttr(lower == "lib-name", string(val))
	c.W.Simple("OK")
}

// setLibAttr sets the library name or version; "" clears it (SetLib cannot).
func (cn *Conn) setLibAttr(name bool, v string) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if name {
		cn.libName = v
	} else {
		cn.libVer = v
	}
}

func cmdClientInfo(c *Ctx) {
	c.W.Verbatim("txt", clientInfoLine(c, c.Conn))
}

func cmdClientList(c *Ctx) {
	var ids map[int64]bool
	args := c.Args[2:]
	for len(args) > 0 {
		switch opt := strings.ToLower(string(args[0])); {
		case opt == "type" && len(args) == 2:
			switch strings.ToLower(string(args[1])) {
			case "normal":
			case "master", "replica", "slave", "pubsub":
				// redamo has only normal clients: none of these types match.
				ids = map[int64]bool{}
			default:
				c.W.Error(fmt.Sprintf(MsgClientType, args[1]))
				return
			}
			args = nil
		case opt == "id" && len(args) >= 2:
			if ids == nil {
				ids = map[int64]bool{}
			}
			for _, a := range args[1:] {
				id, ok := string2ll(a)
				if !ok {
					c.W.Error(MsgInvalidClientID)
					return
				}
				ids[id] = true
			}
			args = nil
		default:
			c.W.Error(MsgSyntax)
			return
		}
	}
	var b strings.Builder
	for _, cn := range c.Srv.Clients.List() {
		if ids != nil && !ids[cn.ID] {
			continue
		}
		b.WriteString(clientInfoLine(c, cn))
	}
	c.W.Verbatim("txt", b.String())
}

// clientInfoLine is one line of CLIENT LIST in Redis 7's field layout (plus
// Redis 7.2's lib-name and lib-ver). redamo does not account per-client
// buffer memory, so those fields read 0, and has no pub/sub (sub=0). A
// connection in MULTI, or running its EXEC, has flag x and multi= the
// number of commands queued, as in Redis.
func clientInfoLine(c *Ctx, cn *Conn) string {
	now := c.Now()
	db, proto := cn.DB, cn.Proto
	if cn != c.Conn {
		db, proto = cn.Published()
	}
	last, at := cn.Last()
	idle := int64(now.Sub(at).Seconds())
	if cn == c.Conn || idle < 0 {
		idle = 0
	}
	age := int64(now.Sub(cn.Created).Seconds())
	if age < 0 {
		age = 0
	}
	libName, libVer := cn.Lib()
	var b strings.Builder
	b.Grow(256)
	flags, multi := "N", cn.multiLen.Load()-1
	if multi >= 0 {
		flags = "x"
	}
	fmt.Fprintf(&b, "id=%d addr=%s laddr=%s fd=%d name=%s age=%d idle=%d flags=%s db=%d",
		cn.ID, cn.Addr, cn.LocalAddr, cn.FD, cn.Name(), age, idle, flags, db)
	fmt.Fprintf(&b, " sub=0 psub=0 ssub=0 multi=%d qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0", multi)
	b.WriteString(" rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd=")
	b.WriteString(last)
	b.WriteString(" user=default redir=-1 resp=")
	b.WriteString(strconv.Itoa(proto))
	b.WriteString(" lib-name=")
	b.WriteString(libName)
	b.WriteString(" lib-ver=")
	b.WriteString(libVer)
	b.WriteByte('\n')
	return b.String()
}

func cmdClientKill(c *Ctx) {
	// The old form: CLIENT KILL addr:port.
	if len(c.Args) == 3 {
		for _, cn := range c.Srv.Clients.List() {
			if cn.Addr == string(c.Args[2]) {
				killClient(c, cn.ID)
				c.W.Simple("OK")
				return
			}
		}
		c.W.Error(MsgNoSuchClient)
		return
	}
	var (
		id          int64
		addr, laddr string
		hasAddr     bool
		hasLaddr    bool
		noneMatch   bool
		skipMe      = true
	)
	args := c.Args[2:]
	for ; len(args) > 0; args = args[2:] {
		if len(args) < 2 {
			c.W.Error(MsgSyntax)
			return
		}
		val := args[1]
		switch strings.ToLower(string(args[0])) {
		case "id":
			n, ok := string2ll(val)
			if !ok || n <= 0 {
				c.W.Error(MsgClientIDRange)
				return
			}
			id = n
		case "type":
			switch strings.ToLower(string(val)) {
			case "normal":
			case "master", "replica", "slave", "pubsub":
				noneMatch = true
			default:
				c.W.Error(fmt.Sprintf(MsgClientType, val))
				return
			}
		case "user":
			if string(val) != "default" {
				c.W.Error(fmt.Sprintf(MsgNoSuchUser, val))
				return
			}
		case "addr":
			addr, hasAddr = string(val), true
		case "laddr":
			laddr, hasLaddr = string(val), true
		case "skipme":
			switch strings.ToLower(string(val)) {
			case "yes":
				skipMe = true
			case "no":
				skipMe = false
			default:
				c.W.Error(MsgSyntax)
				return
			}
		default:
			c.W.Error(MsgSyntax)
			return
		}
	}
	killed := int64(0)
	if !noneMatch {
		for _, cn := range c.Srv.Clients.List() {
			switch {
			case id != 0 && cn.ID != id,
				hasAddr && cn.Addr != addr,
				hasLaddr && cn.LocalAddr != laddr,
				skipMe && cn == c.Conn:
				continue
			}
			killClient(c, cn.ID)
			killed++
		}
	}
	c.W.Int(killed)
}

// killClient closes a connection; the caller's own connection closes once
// this reply is out, as in Redis.
func killClient(c *Ctx, id int64) {
	if id == c.Conn.ID {
		c.Conn.CloseAfterReply = true
		return
	}
	c.Srv.Clients.Kill(id)
}

func cmdClientHelp(c *Ctx) {
	writeHelp(c, "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"GETNAME",
		"    Return the name of the current connection.",
		"ID",
		"    Return the ID of the current connection.",
		"INFO",
		"    Return information about the current client connection.",
		"KILL <ip:port>",
		"    Kill connection made from <ip:port>.",
		"KILL <option> <value> [<option> <value> [...]]",
		"    Kill connections. Options are:",
		"    * ADDR (<ip:port>|<unixsocket>:0)",
		"      Kill connections made from the specified address",
		"    * LADDR (<ip:port>|<unixsocket>:0)",
		"      Kill connections made to specified local address",
		"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
		"      Kill connections by type.",
		"    * USER <username>",
		"      Kill connections authenticated by <username>.",
		"    * SKIPME (YES|NO)",
		"      Skip killing current connection (default: yes).",
		"    * ID <client-id>",
		"      Kill connections by client id.",
		"LIST [options ...]",
		"    Return information about client connections. Options:",
		"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
		"      Return clients of specified type.",
		"    * ID <client-id> [<client-id> ...]",
		"      Return clients of specified IDs only.",
		"SETINFO <option> <value>",
		"    Set client meta attr. Options are:",
		"    * LIB-NAME: the client lib name.",
		"    * LIB-VER: the client lib version.",
		"SETNAME <name>",
		"    Assign the name <name> to the current connection.",
	)
}

// writeHelp replies like Redis's addReplyHelp: the header, the lines, and
// the closing HELP entry, as simple strings.
func writeHelp(c *Ctx, header string, lines ...string) {
	c.W.Array(len(lines) + 3)
	c.W.Simple(header)
	for _, l := range lines {
		c.W.Simple(l)
	}
	c.W.Simple("HELP")
	c.W.Simple("    Prints this help.")
}

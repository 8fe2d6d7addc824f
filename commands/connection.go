package commands

import (
	"crypto/subtle"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/redamo/redamo/model"
)

// The connection family: PING, ECHO, QUIT, RESET, SELECT, AUTH, HELLO and
// CLIENT.
func registerConnection(t *Table) {
	t.Register([]Row{
		{Name: "ping", Run: cmdPing, InSubscribed: true},
		{Name: "echo", Run: cmdEcho},
		{Name: "quit", Run: cmdQuit, RunsInMulti: true, InSubscribed: true},
		{Name: "reset", Run: cmdReset, RunsInMulti: true, InSubscribed: true},
		{Name: "select", Run: cmdSelect},
		{Name: "auth", Run: cmdAuth},
		{Name: "hello", Run: cmdHello},
		{Name: "client|caching", Run: cmdClientCaching},
		{Name: "client|getname", Run: cmdClientGetname},
		{Name: "client|getredir", Run: cmdClientGetredir},
		{Name: "client|help", Run: cmdClientHelp},
		{Name: "client|id", Run: cmdClientID},
		{Name: "client|info", Run: cmdClientInfo},
		{Name: "client|kill", Run: cmdClientKill},
		{Name: "client|list", Run: cmdClientList},
		{Name: "client|setinfo", Run: cmdClientSetinfo},
		{Name: "client|setname", Run: cmdClientSetname},
		{Name: "client|tracking", Run: cmdClientTracking},
		{Name: "client|trackinginfo", Run: cmdClientTrackinginfo},
	})
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
	if len(c.Args) <= 2 && c.Conn != nil && c.Conn.subscribed && c.Conn.Proto == 2 {
		// RESP2's subscribed mode can only carry arrays.
		c.W.Array(2)
		c.W.BulkString("pong")
		if len(c.Args) == 2 {
			c.W.Bulk(c.Args[1])
		} else {
			c.W.BulkString("")
		}
		return
	}
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
	// Redis frees the client as its reply goes out: nothing published
	// after the reply reaches it.
	c.Srv.Leave(c.Conn)
	c.Conn.CloseAfterReply = true
	c.W.Simple("OK")
}

// cmdReset returns the connection to its state right after connecting.
func cmdReset(c *Ctx) {
	c.Conn.discardTx()
	c.Srv.Leave(c.Conn)
	c.Conn.DB = 0
	c.Conn.SetName("")
	c.Conn.Authed = c.Srv.RequirePass() == ""
	setProto(c, 2)
	c.W.Simple("RESET")
}

func cmdSelect(c *Ctx) {
	n, ok := model.String2ll(c.Args[1])
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
		v, ok := model.String2ll(c.Args[1])
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
				id, ok := model.String2ll(a)
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
// buffer memory, so those fields read 0. A
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
	sub, psub, ssub := c.Srv.subCounts(cn)
	flags, multi := "", cn.multiLen.Load()-1
	if c.Srv.monitors.has(cn) {
		flags = "O"
	}
	if sub+psub+ssub > 0 {
		flags += "P"
	}
	if multi >= 0 {
		flags += "x"
	}
	tflags, redir := trackingFlags(cn)
	flags += tflags
	if flags == "" {
		flags = "N"
	}
	fmt.Fprintf(&b, "id=%d addr=%s laddr=%s fd=%d name=%s age=%d idle=%d flags=%s db=%d",
		cn.ID, cn.Addr, cn.LocalAddr, cn.FD, cn.Name(), age, idle, flags, db)
	fmt.Fprintf(&b, " sub=%d psub=%d ssub=%d multi=%d qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0", sub, psub, ssub, multi)
	b.WriteString(" rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd=")
	b.WriteString(last)
	b.WriteString(" user=default redir=")
	b.WriteString(strconv.FormatInt(redir, 10))
	b.WriteString(" resp=")
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
			n, ok := model.String2ll(val)
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
		"CACHING (YES|NO)",
		"    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
		"GETREDIR",
		"    Return the client ID we are redirecting to when tracking is enabled.",
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
		"TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
		"         [OPTIN] [OPTOUT] [NOLOOP]",
		"    Control server assisted client side caching.",
		"TRACKINGINFO",
		"    Report tracking status for the current connection.",
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

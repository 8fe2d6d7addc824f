// Package resp is redamo's network front end: it accepts client connections
// (on github.com/tidwall/redcon), reads requests exactly as Redis 7.0 does
// (RESP multibulk and inline, with Redis's limits and protocol errors),
// dispatches them to the command table and encodes the replies in RESP2 or
// RESP3. It is the only package that knows RESP bytes.
package resp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"runtime/debug"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tidwall/redcon"

	"github.com/redamo/redamo/commands"
	"github.com/redamo/redamo/dynastore"
)

// Options tune a Server.
type Options struct {
	// OnCommand is told about every executed command: its name ("get",
	// "client|list"), how long it took and whether it replied with an error.
	OnCommand func(name string, d time.Duration, failed bool)
	// OnConn is told when a connection opens (+1) or closes (-1).
	OnConn func(delta int)
	// Logf logs what an operator should know about (a handler that panicked
	// or broke the one-reply rule); nil discards.
	Logf func(format string, args ...any)
}

// Server serves the Redis protocol for one commands.Server.
type Server struct {
	srv  *commands.Server
	opts Options
	rs   *redcon.Server

	mu      sync.Mutex
	ln      *listener
	served  chan struct{} // closed when Serve has returned
	started bool

	// ctx is the parent of every command's context; it is cancelled when a
	// Shutdown gives up waiting, so whatever still runs returns.
	ctx    context.Context
	cancel context.CancelFunc
	// stopWaiting is cancelled as soon as Shutdown begins: blocking commands
	// (BLPOP ...) stop waiting then, rather than holding the shutdown for
	// their whole timeout. They take nothing once cancelled.
	stopWaiting context.Context
	stopWait    context.CancelFunc

	nextID  atomic.Int64
	clients registry

	// gate is held shared by every running command; Shutdown takes it
	// exclusively to wait for in-flight commands, then sets stopped.
	gate     sync.RWMutex
	stopped  bool
	draining atomic.Bool
}

// New returns a server for srv; it fills srv's unset fields with defaults
// and installs itself as srv.Clients.
func New(srv *commands.Server, opts Options) *Server {
	if srv.Table == nil {
		srv.Table = commands.NewTable()
	}
	if srv.Clock == nil {
		srv.Clock = time.Now
	}
	if srv.Started.IsZero() {
		srv.Started = srv.Clock()
	}
	if srv.Commands == nil {
		srv.Commands = commands.NewCommandStats()
	}
	if opts.OnCommand != nil {
		if prev := srv.OnCommand; prev != nil {
			next := opts.OnCommand
			srv.OnCommand = func(name string, d time.Duration, failed bool) {
				prev(name, d, failed)
				next(name, d, failed)
			}
		} else {
			srv.OnCommand = opts.OnCommand
		}
	}
	s := &Server{srv: srv, opts: opts, served: make(chan struct{})}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.stopWaiting, s.stopWait = context.WithCancel(context.Background())
	s.clients.conns = map[int64]*connState{}
	srv.Clients = &s.clients
	s.rs = redcon.NewServerNetwork("tcp", "", s.serveCommand, s.accept, s.closed)
	return s
}

// ListenAndServe listens on addr (host:port) and serves until Shutdown.
func (s *Server) ListenAndServe(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("resp: listen on %s: %w", addr, err)
	}
	return s.Serve(ln)
}

// Serve serves connections from ln until Shutdown; it returns nil after a
// Shutdown, else the listener's error.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		return errors.New("resp: server already serving")
	}
	s.started = true
	if s.draining.Load() {
		// Shutdown came first: serve nothing (it has already returned).
		s.mu.Unlock()
		close(s.served)
		return nil
	}
	s.ln = &listener{Listener: ln, s: s, release: make(chan struct{})}
	l := s.ln
	s.mu.Unlock()
	defer close(s.served)

	stopSampler := make(chan struct{})
	defer close(stopSampler)
	go s.sample(stopSampler)

	err := s.rs.Serve(l)
	if s.draining.Load() {
		return nil
	}
	return err
}

// Addr returns the address being served, nil before Serve.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// Shutdown stops accepting connections, lets the commands in flight finish
// and their replies go out, then closes every connection. If ctx ends first,
// the commands still running have their context cancelled, the connections
// are closed anyway and ctx's error is returned.
func (s *Server) Shutdown(ctx context.Context) error {
	// draining is set under mu so that Serve either registered its listener
	// before (and is shut down here) or sees draining and serves nothing.
	s.mu.Lock()
	l := s.ln
	twice := s.draining.Swap(true)
	s.mu.Unlock()
	if twice {
		return errors.New("resp: Shutdown called twice")
	}
	s.stopWait()
	if l == nil {
		s.cancel()
		return nil
	}
	_ = l.Listener.Close()

	drained := make(chan struct{})
	go func() {
		s.gate.Lock()
		s.stopped = true
		s.gate.Unlock()
		close(drained)
	}()
	var err error
	select {
	case <-drained:
	case <-ctx.Done():
		err = ctx.Err()
		s.cancel()
	}
	close(l.release)
	<-s.served
	s.cancel()
	return err
}

// listener hands redcon client connections wrapped in clientConn. Once
// Shutdown closed the real listener, Accept holds redcon's accept loop until
// the in-flight commands are done, because redcon closes every connection as
// soon as that loop ends.
type listener struct {
	net.Listener
	s       *Server
	release chan struct{}
	// backoff paces retries after accept errors (out of file descriptors):
	// redcon retries at once, which would spin.
	backoff time.Duration
}

func (l *listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		if l.s.draining.Load() {
			<-l.release
			return nil, net.ErrClosed
		}
		if !errors.Is(err, net.ErrClosed) {
			l.backoff = min(max(2*l.backoff, 5*time.Millisecond), time.Second)
			l.s.logf("resp: accept: %v; retrying in %v", err, l.backoff)
			time.Sleep(l.backoff)
		}
		return nil, err
	}
	l.backoff = 0
	return newClientConn(c, &l.s.srv.Net), nil
}

// sample feeds the instantaneous_* metrics of INFO every 100 ms.
func (s *Server) sample(stop <-chan struct{}) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			s.srv.Commands.Sample(now)
			s.srv.Net.Sample(now)
		}
	}
}

// connState is one connection's state, kept in redcon's Conn context.
type connState struct {
	cn *commands.Conn
	w  *Writer
	cc *clientConn
	// closing drops the rest of a pipeline after QUIT or a kill.
	closing bool
	// labelName and labelCtx are the last command's name and its labelled
	// context: a pipeline usually repeats one command, and the context
	// (an allocation per request otherwise) depends on nothing else.
	labelName string
	labelCtx  context.Context
}

func (s *Server) accept(rc redcon.Conn) bool {
	cc, ok := rc.NetConn().(*clientConn)
	if !ok {
		return false
	}
	if s.srv.Refuses(cc.RemoteAddr()) {
		// As Redis: the error, then the connection closes.
		_, _ = cc.Conn.Write([]byte("-" + commands.MsgProtectedMode + "\r\n"))
		return false
	}
	if int64(s.clients.count()) >= s.srv.MaxClients() {
		// As Redis: the error, then the connection closes.
		_, _ = cc.Conn.Write([]byte("-" + commands.MsgMaxClients + "\r\n"))
		s.srv.Net.Rejected.Add(1)
		return false
	}
	now := s.srv.Clock()
	cn := &commands.Conn{
		ID:        s.nextID.Add(1),
		Addr:      rc.RemoteAddr(),
		LocalAddr: cc.LocalAddr().String(),
		FD:        socketFD(cc.Conn),
		Created:   now,
		Proto:     2,
		Authed:    s.srv.RequirePass() == "",
	}
	cn.Touch("NULL", now)
	cn.Publish()
	st := &connState{cn: cn, w: NewWriter(2), cc: cc}
	cc.p.maxBulk = s.srv.ProtoMaxBulkLen
	cc.p.authRequired = func() bool { return s.srv.AuthRequired(cn) }
	rc.SetContext(st)
	s.clients.add(st)
	s.srv.Net.Connections.Add(1)
	if s.opts.OnConn != nil {
		s.opts.OnConn(1)
	}
	return true
}

// socketFD returns c's file descriptor for CLIENT LIST, -1 if it has none.
func socketFD(c net.Conn) int {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	fd := -1
	if sc, ok := c.(syscall.Conn); ok {
		if raw, err := sc.SyscallConn(); err == nil {
			_ = raw.Control(func(f uintptr) { fd = int(f) })
		}
	}
	return fd
}

func (s *Server) closed(rc redcon.Conn, _ error) {
	st, ok := rc.Context().(*connState)
	if !ok {
		return
	}
	s.clients.remove(st.cn.ID)
	if s.opts.OnConn != nil {
		s.opts.OnConn(-1)
	}
}

// serveCommand runs one request; redcon calls it for each request of a
// pipeline in order, then flushes the replies.
func (s *Server) serveCommand(rc redcon.Conn, req redcon.Command) {
	st, ok := rc.Context().(*connState)
	if !ok || st.closing {
		return
	}
	if st.cc.killed.Load() {
		st.closing = true
		return
	}
	s.gate.RLock()
	defer s.gate.RUnlock()
	if s.stopped {
		st.closing = true
		_ = rc.Close()
		return
	}
	s.execute(st, req.Args)
	rc.WriteRaw(st.w.Bytes())
	st.w.Reset()
	switch {
	case st.cn.CloseAfterReply:
		st.closing = true
		_ = rc.Close() // flushes first
	case s.draining.Load():
		// Shutdown closes connections as soon as the commands in flight
		// are done: the reply must be on the wire by then.
		_ = redcon.BaseWriter(rc).Flush()
	}
}

// execute resolves and runs one request, leaving exactly one reply in st.w.
func (s *Server) execute(st *connState, args [][]byte) {
	cn, w := st.cn, st.w
	if w.Proto() != cn.Proto {
		w.SetProto(cn.Proto)
	}
	cmd, msg := s.srv.Table.Resolve(args)
	if msg != "" {
		if cmd != nil {
			s.srv.Commands.Reject(cmd.Name)
		}
		w.Error(msg)
		return
	}
	if s.srv.AuthRequired(cn) && !cmd.HasFlag(commands.FlagNoAuth) {
		s.srv.Commands.Reject(cmd.Name)
		w.Error(commands.MsgNoAuth)
		return
	}
	if st.labelCtx == nil || st.labelName != cmd.Name {
		st.labelName, st.labelCtx = cmd.Name, dynastore.WithLabel(s.ctx, cmd.Name)
	}
	ctx := st.labelCtx
	if cmd.HasFlag(commands.FlagBlocking) {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		stopWatch := watchHangup(st.cc.Conn, cancel)
		stopShutdown := context.AfterFunc(s.stopWaiting, cancel)
		defer cancel()
		defer stopShutdown()
		defer stopWatch()
	}
	c := &commands.Ctx{
		Context: ctx,
		Args:    args,
		W:       w,
		Store:   s.srv.Store,
		Conn:    cn,
		Srv:     s.srv,
	}
	cn.Touch(cmd.Name, c.Now())
	s.run(c, cmd)
	if !w.Complete() {
		s.logf("resp: %s wrote an incomplete or extra reply; replaced by an error", cmd.Name)
		w.Reset()
		w.Error(fmt.Sprintf(commands.MsgMalformedReply, cmd.Name))
	}
	cn.Publish()
}

// run calls the handler, turning a panic into an error reply so one bad
// request cannot take the process down.
func (s *Server) run(c *commands.Ctx, cmd *commands.Command) {
	defer func() {
		if r := recover(); r != nil {
			s.logf("resp: panic in %s: %v\n%s", cmd.Name, r, debug.Stack())
			if w, ok := c.W.(*Writer); ok {
				w.Reset()
			}
			c.W.Error(fmt.Sprintf(commands.MsgInternalError, cmd.Name))
		}
	}()
	s.srv.Run(c, cmd)
}

func (s *Server) logf(format string, args ...any) {
	if s.opts.Logf != nil {
		s.opts.Logf(format, args...)
	}
}

// registry is the set of open connections (commands.Clients).
type registry struct {
	mu    sync.Mutex
	conns map[int64]*connState
}

func (r *registry) add(st *connState) {
	r.mu.Lock()
	r.conns[st.cn.ID] = st
	r.mu.Unlock()
}

func (r *registry) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.conns)
}

func (r *registry) remove(id int64) {
	r.mu.Lock()
	delete(r.conns, id)
	r.mu.Unlock()
}

// List returns every open connection, by increasing id.
func (r *registry) List() []*commands.Conn {
	r.mu.Lock()
	out := make([]*commands.Conn, 0, len(r.conns))
	for _, st := range r.conns {
		out = append(out, st.cn)
	}
	r.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Kill closes connection id; its pending requests are dropped.
func (r *registry) Kill(id int64) bool {
	r.mu.Lock()
	st := r.conns[id]
	r.mu.Unlock()
	if st == nil {
		return false
	}
	st.cc.kill()
	return true
}

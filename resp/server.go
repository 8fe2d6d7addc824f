// Package resp is redamo's network front end: it accepts client connections
// (one goroutine each), reads requests exactly as Redis 7.0 does (RESP
// multibulk and inline, with Redis's limits and protocol errors),
// dispatches them to the command table and encodes the replies in RESP2 or
// RESP3. It is the only package that knows RESP bytes.
package resp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime/debug"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redamo/redamo/commands"
	"github.com/redamo/redamo/dynastore"
	"github.com/redamo/redamo/scripting"
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

	mu      sync.Mutex
	ln      net.Listener
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

	clients registry
	// conns counts the connection goroutines, rejected clients' included.
	conns sync.WaitGroup
	// draining is set when Shutdown begins: connections run no further
	// request and close once their replies are written.
	draining atomic.Bool
}

// New returns a server for srv; it fills srv's unset fields with defaults
// and installs itself as srv.Clients.
func New(srv *commands.Server, opts Options) *Server {
	if srv.Table == nil {
		srv.Table = commands.NewTable()
		scripting.Register(srv.Table)
	}
	if srv.Started.IsZero() {
		srv.Started = srv.Now()
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
	s.clients.conns = map[int64]*conn{}
	srv.Clients = &s.clients
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
	s.ln = ln
	s.mu.Unlock()
	defer close(s.served)

	stopSampler := make(chan struct{})
	defer close(stopSampler)
	go s.sample(stopSampler)

	// backoff paces retries after accept errors (out of file descriptors).
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.draining.Load() {
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				s.clients.killAll()
				return fmt.Errorf("resp: accept: %w", err)
			}
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.logf("resp: accept: %v; retrying in %v", err, backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		s.admit(nc)
	}
}

// admit checks a new client as Redis does on accept (protected mode,
// maxclients), registers it, so that ids follow the order of arrival, and
// starts its goroutine. A refused client is told why from a goroutine of
// its own: a slow one cannot hold up the accept loop.
func (s *Server) admit(nc net.Conn) {
	s.conns.Add(1)
	refuse := func(msg string) {
		go func() {
			defer s.conns.Done()
			reject(nc, msg)
		}()
	}
	if s.srv.Refuses(nc.RemoteAddr()) {
		refuse(commands.MsgProtectedMode)
		return
	}
	c := newConn(s, nc)
	if !s.clients.add(c, s.srv.MaxClients()) {
		s.srv.Net.Rejected.Add(1)
		refuse(commands.MsgMaxClients)
		return
	}
	c.cn.Publish()
	s.srv.Net.Connections.Add(1)
	if s.opts.OnConn != nil {
		s.opts.OnConn(1)
	}
	go func() {
		defer s.conns.Done()
		c.serve()
	}()
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
	ln := s.ln
	twice := s.draining.Swap(true)
	s.mu.Unlock()
	if twice {
		return errors.New("resp: Shutdown called twice")
	}
	s.stopWait()
	if ln == nil {
		s.cancel()
		return nil
	}
	_ = ln.Close()
	// Once Serve has returned no connection is added: the ones there are
	// close after their command in flight, if any, and the idle ones are
	// woken from their read to close.
	<-s.served
	s.clients.wake()
	drained := make(chan struct{})
	go func() {
		s.conns.Wait()
		close(drained)
	}()
	var err error
	select {
	case <-drained:
	case <-ctx.Done():
		err = ctx.Err()
		s.cancel()
		s.clients.killAll()
	}
	s.cancel()
	return err
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

// execute resolves and runs one request, adding exactly one reply to c.w.
func (s *Server) execute(c *conn, args [][]byte) {
	cn, w := c.cn, c.w
	w.begin()
	if w.Proto() != cn.Proto {
		w.SetProto(cn.Proto)
	}
	cmd, msg := s.srv.Table.Resolve(args)
	if msg != "" {
		if cmd != nil {
			s.srv.Commands.Reject(cmd.Name)
		}
		w.Error(cn.Rejected(cmd, msg))
		return
	}
	if s.srv.AuthRequired(cn) && !cmd.HasFlag(commands.FlagNoAuth) {
		s.srv.Commands.Reject(cmd.Name)
		w.Error(cn.Rejected(cmd, commands.MsgNoAuth))
		return
	}
	if c.labelCtx == nil || c.labelName != cmd.Name {
		parent := c.tallyCtx
		if cmd.HasFlag(commands.FlagBlocking) {
			// A command that may wait for long counts its requests as
			// they happen, not when it replies.
			parent = s.ctx
		}
		c.labelName, c.labelCtx = cmd.Name, dynastore.WithLabel(parent, cmd.Name)
	}
	ctx := c.labelCtx
	var onPark func()
	if cmd.HasFlag(commands.FlagBlocking) {
		// Its wait ends when a Shutdown begins, and when its client
		// leaves (seen once it parks: watch.go).
		ctx, c.cancel = context.WithCancel(ctx)
		stopShutdown := context.AfterFunc(s.stopWaiting, c.cancel)
		defer c.unpark()
		defer stopShutdown()
		onPark = c.parkFn
	}
	// Handlers keep neither the context nor the arguments (slices of the
	// read buffer) once they return: both are reused.
	c.cx = commands.Ctx{
		Context: ctx,
		Args:    args,
		W:       w,
		Target:  s.srv.Store,
		Conn:    cn,
		Srv:     s.srv,
		OnPark:  onPark,
	}
	cx := &c.cx
	if !c.clock.IsZero() {
		cx.SetNow(c.clock)
	}
	cn.Touch(cmd.Name, cx.Now())
	db, proto := cn.DB, cn.Proto
	s.run(cx, cmd)
	c.clock = cx.End()
	c.cx = commands.Ctx{}
	if cn.NoReply {
		cn.NoReply = false
		w.discard()
		return
	}
	if !w.Complete() && !(cmd.SeveralReplies && w.Whole()) {
		s.logf("resp: %s wrote an incomplete or extra reply; replaced by an error", cmd.Name)
		w.discard()
		w.Error(fmt.Sprintf(commands.MsgMalformedReply, cmd.Name))
	}
	if cn.DB != db || cn.Proto != proto {
		cn.Publish()
	}
}

// run calls the handler, turning a panic into an error reply so one bad
// request cannot take the process down.
func (s *Server) run(c *commands.Ctx, cmd *commands.Command) {
	defer func() {
		if r := recover(); r != nil {
			s.srv.Panics.Add(1)
			s.logf("resp: panic in %s: %v\n%s", cmd.Name, r, debug.Stack())
			if w, ok := c.W.(*Writer); ok {
				w.discard()
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
	mu     sync.Mutex
	conns  map[int64]*conn
	lastID int64
}

// add registers c under a new id, unless max connections are open: then
// it returns false (and, as in Redis, the refused client takes no id).
func (r *registry) add(c *conn, max int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if int64(len(r.conns)) >= max {
		return false
	}
	r.lastID++
	c.cn.ID = r.lastID
	r.conns[c.cn.ID] = c
	return true
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
	for _, c := range r.conns {
		out = append(out, c.cn)
	}
	r.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Lookup returns open connection id, nil if there is none (client
// tracking's REDIRECT).
func (r *registry) Lookup(id int64) *commands.Conn {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.conns[id]; c != nil {
		return c.cn
	}
	return nil
}

// Kill closes connection id; its pending requests are dropped. As in
// Redis, the connection is gone for the commands that follow (CLIENT LIST,
// another KILL) even before its goroutine has noticed.
func (r *registry) Kill(id int64) bool {
	r.mu.Lock()
	c := r.conns[id]
	delete(r.conns, id)
	r.mu.Unlock()
	if c == nil {
		return false
	}
	c.kill()
	return true
}

// wake ends the reads connections are waiting in, so that they see a
// Shutdown; a connection running a command is not disturbed (it checks
// before it reads again).
func (r *registry) wake() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.conns {
		_ = c.nc.SetReadDeadline(aLongTimeAgo)
	}
}

// killAll closes every connection.
func (r *registry) killAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.conns {
		c.kill()
	}
}

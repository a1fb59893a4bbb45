package orchestrator

import (
	"context"
	"encoding/json"
	"sync"
	"time"
)

// Pool keeps SSH connections open between runs, so that the second command
// on the same hosts pays no handshake (the workbench runs many commands on
// one fleet). A connection is reused only for the same target (address,
// user, keys, known_hosts, route), only while it is alive (its transport
// has not closed; the keepalive closes one whose host stopped answering),
// and is closed after IdleTimeout unused, and by Close. Connections in use
// are not shared: each run has its own for as long as it holds it.
type Pool struct {
	Dialer *Dialer
	// IdleTimeout closes a connection unused this long; default 10m.
	IdleTimeout time.Duration
	// KeepAlive is the keepalive interval of pooled connections whose
	// target sets none (ServerAliveInterval); default 30s, 3 tries.
	KeepAlive time.Duration

	mu     sync.Mutex
	idle   map[string][]*idleConn
	closed bool
}

type idleConn struct {
	conn  *Conn
	timer *time.Timer
}

// poolKey is what makes two targets the same connection: everything but
// the timeouts, which a reused connection takes from the new target, and
// the keepalive, which the pool may set.
func poolKey(t Target) string {
	t.ConnectTimeout, t.CommandTimeout, t.InactivityTimeout = 0, 0, 0
	t.ServerAliveInterval, t.ServerAliveCountMax = 0, 0
	t.Sources = nil
	for i := range t.Jump {
		t.Jump[i].Sources = nil
	}
	b, err := json.Marshal(t)
	if err != nil {
		return t.Name + "\x00" + t.HostPort() // cannot happen: plain data
	}
	return string(b)
}

// Get returns a live pooled connection to t, or dials one.
func (p *Pool) Get(ctx context.Context, t Target) (*Conn, error) {
	key := poolKey(t)
	p.mu.Lock()
	for len(p.idle[key]) > 0 {
		list := p.idle[key]
		ic := list[len(list)-1]
		p.idle[key] = list[:len(list)-1]
		if len(p.idle[key]) == 0 {
			delete(p.idle, key)
		}
		if !ic.timer.Stop() { // its idle timeout is closing it
			continue
		}
		if !ic.conn.alive() {
			ic.conn.Close()
			continue
		}
		p.mu.Unlock()
		ic.conn.Target = t
		ic.conn.reused = true
		return ic.conn, nil
	}
	p.mu.Unlock()
	if t.ServerAliveInterval <= 0 {
		t.ServerAliveInterval, t.ServerAliveCountMax = p.KeepAlive, 3
		if t.ServerAliveInterval <= 0 {
			t.ServerAliveInterval = 30 * time.Second
		}
	}
	return p.Dialer.Dial(ctx, t)
}

// Put gives a connection back for reuse; a dead one, or any after Close,
// is closed instead.
func (p *Pool) Put(c *Conn) {
	if c == nil {
		return
	}
	if !c.alive() {
		c.Close()
		return
	}
	key := poolKey(c.Target)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return
	}
	if p.idle == nil {
		p.idle = map[string][]*idleConn{}
	}
	idle := p.IdleTimeout
	if idle <= 0 {
		idle = 10 * time.Minute
	}
	ic := &idleConn{conn: c}
	ic.timer = time.AfterFunc(idle, func() { p.expire(key, ic) })
	p.idle[key] = append(p.idle[key], ic)
}

func (p *Pool) expire(key string, ic *idleConn) {
	p.mu.Lock()
	list := p.idle[key]
	for i, x := range list {
		if x == ic {
			p.idle[key] = append(list[:i:i], list[i+1:]...)
			if len(p.idle[key]) == 0 {
				delete(p.idle, key)
			}
			break
		}
	}
	p.mu.Unlock()
	ic.conn.Close()
}

// Idle is how many connections wait for reuse.
func (p *Pool) Idle() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, l := range p.idle {
		n += len(l)
	}
	return n
}

// Close closes every idle connection; connections in use are closed when
// they are given back.
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, list := range idle {
		for _, ic := range list {
			ic.timer.Stop()
			wg.Add(1)
			go func() {
				defer wg.Done()
				ic.conn.Close()
			}()
		}
	}
	wg.Wait()
}

package mdata

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/seedkeeper/seedkeeper/mdata/internal/wire"
)

// Timeouts bound each wait for the host. They are timeouts on inactivity:
// they bound the wait for the next byte, never a whole line, so a slow
// line and a value of several MiB still arrive whole; the whole operation
// is bounded only by the caller's context.
type Timeouts struct {
	// Drain is the quiet gap that ends the drain of stale input on a
	// shared serial line: what is pending is read at once, then the drain
	// ends at the first gap this long. Stale lines arriving later are told
	// apart by the handshake (which restarts on them) and by request IDs.
	Drain time.Duration
	// Probe is how long to wait for "invalid command" after the bare "\n".
	// It also paces the retries while the host is down, so it is short.
	Probe time.Duration
	// Negotiate is how long to wait for the answer to NEGOTIATE V2.
	Negotiate time.Duration
	// Read is how long to wait for the first byte of a GET or KEYS answer,
	// Write for a PUT or DELETE answer (the host updates its store first,
	// which can take seconds), V1 for any answer from a V1 host.
	Read, Write, V1 time.Duration
	// Idle is the longest silence inside a line once it has begun: a
	// reply cut off mid-line is given up on this long after its last
	// byte. The default is 250 times the byte time of a 9600-baud line
	// (about 1 ms) and 2900 times that of a 115200-baud one (87 µs).
	Idle time.Duration
	// Nudge is the silence after which a bare "\n" is sent while a probe,
	// GET or KEYS goes unanswered. A live host answers it at once with
	// "invalid command"; if that comes back and the answer to the request
	// has not, the request was lost (a host restarted, or a line that ate
	// it) and is sent again, so a lost request costs Nudge rather than
	// Read. A Nudge not shorter than the wait sends none.
	Nudge time.Duration
}

// DefaultTimeouts are the timeouts a zero Options uses.
var DefaultTimeouts = Timeouts{
	Drain:     2 * time.Millisecond,
	Probe:     500 * time.Millisecond,
	Negotiate: 3 * time.Second,
	Read:      5 * time.Second,
	Write:     45 * time.Second,
	V1:        6 * time.Second,
	Idle:      250 * time.Millisecond,
	Nudge:     250 * time.Millisecond,
}

// Options configure a Client. The zero value is ready to use.
type Options struct {
	// Logger receives a line when the host stops answering, a progress
	// line every ProgressInterval while it stays silent, and a line when
	// it answers again. Nil discards them.
	Logger *slog.Logger
	// Progress, if set, is called with the same progress text (for
	// sd_notify STATUS lines, or a command's stderr).
	Progress func(msg string)
	// ProgressInterval defaults to 5 seconds.
	ProgressInterval time.Duration
	// Timeouts default to DefaultTimeouts, field by field.
	Timeouts Timeouts
	// Yield lets other processes use a serial port between requests.
	// Without it a client holds the port's lock from its first request
	// until Close. With it the lock is released after every request and
	// taken again before the next, while the port stays open and the
	// session negotiated (no new handshake): a long-lived client such as
	// seedkeeper watch keeps mdata-get and cloud-init waiting for at most
	// one of its requests. Where the port cannot be unlocked without
	// closing it (Windows), the session is closed instead.
	Yield bool
}

// Client talks to the metadata host. Its methods may be called from several
// goroutines; requests are sent one at a time over one session, which stays
// open between calls until Close.
type Client struct {
	t     Transport
	log   *slog.Logger
	prog  func(string)
	tick  time.Duration
	to    Timeouts
	yield bool

	sem        chan struct{}
	sess       *session
	everOpened bool
}

// New returns a client for the host behind t. Nothing is opened until the
// first request.
func New(t Transport, opts *Options) *Client {
	var o Options
	if opts != nil {
		o = *opts
	}
	c := &Client{
		t:     t,
		log:   o.Logger,
		prog:  o.Progress,
		tick:  o.ProgressInterval,
		to:    o.Timeouts,
		yield: o.Yield,
		sem:   make(chan struct{}, 1),
	}
	if c.log == nil {
		c.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.tick <= 0 {
		c.tick = 5 * time.Second
	}
	d := DefaultTimeouts
	for _, p := range []struct{ v, def *time.Duration }{
		{&c.to.Drain, &d.Drain}, {&c.to.Probe, &d.Probe}, {&c.to.Negotiate, &d.Negotiate},
		{&c.to.Read, &d.Read}, {&c.to.Write, &d.Write}, {&c.to.V1, &d.V1},
		{&c.to.Idle, &d.Idle}, {&c.to.Nudge, &d.Nudge},
	} {
		if *p.v <= 0 {
			*p.v = *p.def
		}
	}
	return c
}

// Transport returns the transport the client uses.
func (c *Client) Transport() Transport { return c.t }

// Get returns the value of key. A key the host does not know gives an
// error matching ErrNotFound; a FAILURE answer a *HostError; an empty
// value is an empty, non-nil slice.
func (c *Client) Get(ctx context.Context, key string) ([]byte, error) {
	return c.do(ctx, request{op: "get", code: wire.CodeGet, key: key, payload: []byte(key)})
}

// Keys lists the keys of the customer metadata (never the read-only sdc:
// keys, which the host does not list).
func (c *Client) Keys(ctx context.Context) ([]string, error) {
	v, err := c.do(ctx, request{op: "keys", code: wire.CodeKeys})
	if err != nil {
		return nil, err
	}
	// Counted before anything is allocated for them: a list of empty
	// lines costs nothing, and the keys share one string.
	n := 0
	for line := range bytes.Lines(v) {
		if len(bytes.TrimSuffix(line, []byte("\n"))) > 0 {
			n++
		}
	}
	if n > maxKeys {
		return nil, &OpError{"keys", "", fmt.Errorf("the host listed %d keys, more than the %d allowed", n, maxKeys)}
	}
	all := string(v)
	keys := make([]string, 0, n)
	for k := range strings.Lines(all) {
		if k = strings.TrimSuffix(k, "\n"); k != "" {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	return keys, nil
}

// Put sets key to value. The host refuses an empty value and keys in the
// sdc: namespace with a *HostError; a V1 host cannot do it at all
// (ErrUnsupported).
func (c *Client) Put(ctx context.Context, key string, value []byte) error {
	_, err := c.do(ctx, request{op: "put", code: wire.CodePut, key: key, payload: wire.PutPayload(key, value)})
	return err
}

// Delete removes key. Deleting a key that does not exist succeeds.
func (c *Client) Delete(ctx context.Context, key string) error {
	_, err := c.do(ctx, request{op: "delete", code: wire.CodeDelete, key: key, payload: []byte(key)})
	return err
}

// Close ends the session, releasing the port and its lock.
func (c *Client) Close() error {
	c.sem <- struct{}{}
	defer func() { <-c.sem }()
	return c.closeSession()
}

func (c *Client) closeSession() error {
	if c.sess == nil {
		return nil
	}
	err := c.sess.conn.Close()
	c.sess = nil
	return err
}

type request struct {
	op      string
	code    string
	key     string
	payload []byte
}

// answer errors are the host's final word; anything else resets the
// session and tries again.
func isAnswer(err error) bool {
	var he *HostError
	return errors.Is(err, ErrNotFound) || errors.Is(err, ErrUnsupported) || errors.As(err, &he) || errors.Is(err, errBadKey)
}

var errBadKey = errors.New("key cannot be sent")

func (c *Client) do(ctx context.Context, r request) ([]byte, error) {
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, &OpError{r.op, r.key, fmt.Errorf("%w: %w", ErrUnavailable, ctx.Err())}
	}
	defer func() { <-c.sem }()

	defer c.yieldPort()
	w := waiter{c: c, start: time.Now()}
	for {
		attempt := time.Now()
		v, err := c.attempt(ctx, r)
		if err == nil || isAnswer(err) {
			w.recovered()
			if err != nil {
				return nil, &OpError{r.op, r.key, err}
			}
			return v, nil
		}
		if ctx.Err() != nil {
			return nil, &OpError{r.op, r.key, w.unavailable(ctx.Err(), err)}
		}
		if isPermanent(err) && !(c.everOpened && isNotExist(err)) {
			return nil, &OpError{r.op, r.key, err}
		}
		w.failed(err)
		// Failures that come back at once (a refused connection, a host
		// that keeps answering the probe with FAILURE) must not spin.
		if pause := minCycle - time.Since(attempt); pause > 0 {
			t := time.NewTimer(pause)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil, &OpError{r.op, r.key, w.unavailable(ctx.Err(), err)}
			}
		}
	}
}

// minCycle is the shortest time between two session starts.
const minCycle = 250 * time.Millisecond

// yielder is a Conn whose lock can be let go and taken again while it
// stays open (a serial port on Unix).
type yielder interface {
	unlock()
	relock(ctx context.Context) error
}

// yieldPort lets other processes have a shared port until the next
// request, when the client was asked to.
func (c *Client) yieldPort() {
	if !c.yield || c.sess == nil || !c.sess.shared || c.sess.yielded {
		return
	}
	if y, ok := c.sess.conn.(yielder); ok {
		y.unlock()
		c.sess.yielded = true
		return
	}
	c.closeSession()
}

// attempt runs one request, starting a session first when there is none.
// Any error other than an answer leaves no session behind.
func (c *Client) attempt(ctx context.Context, r request) ([]byte, error) {
	if c.sess != nil && c.sess.yielded {
		if err := c.sess.conn.(yielder).relock(ctx); err != nil {
			c.closeSession()
			return nil, err
		}
		c.sess.yielded = false
	}
	if c.sess == nil {
		conn, err := c.t.Open(ctx)
		if err != nil {
			return nil, err
		}
		c.everOpened = true
		c.sess = &session{conn: conn, shared: c.t.Shared(), to: c.to}
	}
	s := c.sess
	// A context that ends closes the connection, which unblocks any read.
	stop := context.AfterFunc(ctx, func() { s.conn.Close() })
	v, err := s.run(ctx, r)
	stop()
	if err != nil && !isAnswer(err) || ctx.Err() != nil {
		c.closeSession()
	}
	return v, err
}

// waiter keeps the log quiet while the host is away: one line when it
// stops answering, one every progress interval, one when it is back.
type waiter struct {
	c        *Client
	start    time.Time
	attempts int
	lastLog  time.Time
	last     error
}

func (w *waiter) failed(err error) {
	w.attempts++
	w.last = err
	now := time.Now()
	switch {
	case w.attempts == 1:
		w.lastLog = now
		w.c.log.Warn("metadata host not answering; retrying", "transport", w.c.t.String(), "err", err)
		w.progress(fmt.Sprintf("waiting for the metadata host on %s: %v", w.c.t, err))
	case now.Sub(w.lastLog) >= w.c.tick:
		w.lastLog = now
		elapsed := now.Sub(w.start).Round(time.Second)
		w.c.log.Warn("still waiting for the metadata host", "transport", w.c.t.String(),
			"waited", elapsed.String(), "attempts", w.attempts, "err", err)
		w.progress(fmt.Sprintf("still waiting for the metadata host on %s (%s, %d attempts): %v", w.c.t, elapsed, w.attempts, err))
	}
}

func (w *waiter) recovered() {
	if w.attempts == 0 {
		return
	}
	w.c.log.Info("metadata host answered", "transport", w.c.t.String(),
		"waited", time.Since(w.start).Round(time.Millisecond).String(), "attempts", w.attempts+1)
}

func (w *waiter) progress(msg string) {
	if w.c.prog != nil {
		w.c.prog(msg)
	}
}

func (w *waiter) unavailable(ctxErr, last error) error {
	// The attempt the context cut short failed only because of it; the
	// failure before it says more.
	if w.last != nil {
		last = w.last
	}
	if last == nil {
		return fmt.Errorf("%w on %s: %w", ErrUnavailable, w.c.t, ctxErr)
	}
	return fmt.Errorf("%w on %s: %w (last: %v)", ErrUnavailable, w.c.t, ctxErr, last)
}

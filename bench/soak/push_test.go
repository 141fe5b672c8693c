//go:build soak && linux

package soak

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/anteroom/anteroom/internal/pushstub"
	"github.com/anteroom/anteroom/internal/wait"
	"github.com/anteroom/anteroom/push"
)

// pushes are the crowd's Web Push subscriptions: each subscriber's
// browser is a push service stub on loopback (internal/pushstub), which
// checks the VAPID signature and decrypts each notice. One notice per
// turn: a place whose notice arrived twice is a violation, unless a fault
// that can cut a send from its record (a node killed, Redis away) came
// between the two copies — delivery is at least once.
type pushes struct {
	key string // the nodes' VAPID public key

	mu   sync.Mutex
	subs map[string][]*pushSub // by sale
	// total, notified, twice and tolerated count the subscriptions made,
	// those that got a notice, got more than one, and got more than one
	// across a fault.
	total, notified, twice, tolerated int
}

// pushSub is one subscriber's browser.
type pushSub struct {
	user string
	stub *pushstub.Stub
}

// pushSettings writes a VAPID key into dir and returns the settings that
// give it to a node, with the stubs' loopback push service allowed over
// plain http (by name, as the node requires) and the key's public half.
func pushSettings(dir string) ([]string, string, error) {
	key, err := push.GenerateKey()
	if err != nil {
		return nil, "", err
	}
	file := filepath.Join(dir, "vapid.key")
	if err := os.WriteFile(file, []byte(key), 0o600); err != nil {
		return nil, "", err
	}
	svc, err := push.New(nil, push.Config{PrivateKey: key, Subject: "mailto:soak@shop.example"})
	if err != nil {
		return nil, "", err
	}
	return []string{"ANTEROOM_PUSH_VAPID_KEY=" + file, "ANTEROOM_PUSH_SUBJECT=mailto:soak@shop.example",
		"ANTEROOM_PUSH_HOSTS=127.0.0.1", "ANTEROOM_PUSH_ALLOW_HTTP=true",
		// Nodes dial public addresses only (internal/netguard); the stubs
		// are on loopback, allowed by name.
		"ANTEROOM_ALLOW_PRIVATE_TARGETS=127.0.0.0/8"}, svc.PublicKey(), nil
}

// subscribe has shopper s, holding ticket, subscribe to Web Push with a
// new stub, as the waiting room's page does; asked again on a 5xx or a
// 429, recorded as "push".
func (c *crowd) subscribe(ctx context.Context, s *shopper, ticket string) {
	stub, err := pushstub.Start(c.pushes.key)
	if err != nil {
		c.h.violateNow(s.sale, "push stub: %v", err)
		return
	}
	body, _ := json.Marshal(stub.Subscription())
	for {
		a := c.post(ctx, s, "push", "/events/"+s.sale+"/push", ticket, body)
		if a.Status == http.StatusNoContent {
			c.pushes.mu.Lock()
			if c.pushes.subs == nil {
				c.pushes.subs = map[string][]*pushSub{}
			}
			c.pushes.subs[s.sale] = append(c.pushes.subs[s.sale], &pushSub{user: s.id, stub: stub})
			c.pushes.total++
			c.pushes.mu.Unlock()
			return
		}
		if !retry(ctx, s, a) {
			stub.Close()
			return
		}
	}
}

// checkPushes checks the notices sale ev's subscribers received, once the
// sale is over, and closes their stubs: each a valid your_turn notice of
// the sale, at most one a place (but across a fault).
func (ss *sales) checkPushes(ev string) {
	p := ss.c.pushes
	if p == nil {
		return
	}
	// Notices of the last people admitted may still be on their way.
	wait.Sleep(context.Background(), 2*time.Second)
	p.mu.Lock()
	subs := p.subs[ev]
	delete(p.subs, ev)
	p.mu.Unlock()
	for _, sub := range subs {
		var msgs []pushstub.Message // the notices delivered (answered 2xx)
		for _, m := range sub.stub.Messages() {
			if m.Err != nil || m.Status/100 == 2 {
				msgs = append(msgs, m)
			}
		}
		sub.stub.Close()
		for _, m := range msgs {
			var got push.Message
			ss.checks.Add(1)
			if m.Err != nil || json.Unmarshal(m.Plaintext, &got) != nil || got.Type != "your_turn" || got.Event != ev {
				ss.h.violateNow(ev, "%s's browser got a push notice that is not sale %s's your_turn: %+v (%v)", sub.user, ev, got, m.Err)
				return
			}
		}
		p.mu.Lock()
		if len(msgs) > 0 {
			p.notified++
		}
		p.mu.Unlock()
		if len(msgs) < 2 {
			continue
		}
		ss.h.mu.Lock()
		across := ss.h.faultBetween(msgs[0].At.Add(-time.Second), msgs[len(msgs)-1].At)
		ss.h.mu.Unlock()
		p.mu.Lock()
		p.twice++
		if across {
			p.tolerated++
		}
		p.mu.Unlock()
		if !across {
			ss.h.violateNow(ev, "%s's browser got %d your_turn notices for one place (%s, then %s), no fault between", sub.user, len(msgs),
				msgs[0].At.Format("15:04:05.000"), msgs[1].At.Format("15:04:05.000"))
			return
		}
	}
}

// summary is the run's account of Web Push.
func (p *pushes) summary() (subscribed, notified, twice, tolerated int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.total, p.notified, p.twice, p.tolerated
}

// post sends a JSON body for shopper s with their ticket and records the
// answer as kind (status, problem code, Retry-After).
func (c *crowd) post(ctx context.Context, s *shopper, kind, path, ticket string, body []byte) answer {
	a := answer{op: op{Sale: s.sale, User: s.id, Kind: kind, Node: strconv.Itoa(s.node % len(c.urls)), Lane: s.lane}}
	rctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(rctx, http.MethodPost, c.urls[s.node%len(c.urls)]+path, bytes.NewReader(body))
	req.Header.Set("X-User-ID", s.id)
	req.Header.Set("Authorization", "Bearer "+ticket)
	req.Header.Set("Content-Type", "application/json")
	a.Start = time.Now()
	resp, err := c.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return a
		}
		a.Err = shortErr(err)
		s.node++
		c.h.record(a.op)
		return a
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	a.Status, a.Retry = resp.StatusCode, resp.Header.Get("Retry-After") != ""
	var p struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(raw, &p)
	a.Code = p.Code
	c.h.record(a.op)
	return a
}

package crowd

import (
	"testing"

	"github.com/anteroom/anteroom/client"
)

// The bodies a hold crowd reads most: a waiting status answer, a join
// answer, a claim answer (as the node writes them).
var (
	benchStatus = []byte(`{"state":"waiting","position":123456,"ahead":120000,"eta_seconds":1200,"poll_after_ms":27431}`)
	benchJoin   = []byte(`{"ticket":"eyJhbGciOiJIUzI1NiJ9.eyJldiI6ImZsYXNoLTEiLCJ1IjoiZjEyMzQ1Njc4OSIsInMiOjEyMzQ1NiwiaWF0IjoxNzY0NjY1NjAwfQ.abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG","seq":123456,"position":123456,"state":"waiting","poll_after_ms":27431}`)
	benchClaim  = []byte(`{"claim_id":"01JD8ZQ6V8W3K9X2M4N5P7R8S9","status":"pending"}`)
	sinkInt     int64
	sinkStr     string
)

// BenchmarkHoldDecode is what the hold crowd (the flash and million
// scenarios) pays to read one answer with client/'s decoders.
func BenchmarkHoldDecode(b *testing.B) {
	b.Run("status", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s, err := client.ParseStatus(benchStatus)
			if err != nil || s.State != client.StateWaiting {
				b.Fatal(s, err)
			}
			sinkInt = s.Position + int64(s.PollAfter)
		}
	})
	b.Run("join", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			t, err := client.ParseJoin(benchJoin)
			if err != nil || t.State != client.StateWaiting {
				b.Fatal(t, err)
			}
			sinkStr, sinkInt = t.Ticket, t.Position+int64(t.PollAfter)
		}
	})
	b.Run("claim", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c, err := client.ParseClaim(benchClaim)
			if err != nil {
				b.Fatal(c, err)
			}
			sinkStr = c.ID
		}
	})
}

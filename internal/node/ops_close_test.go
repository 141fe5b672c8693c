package node_test

import (
	"context"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
)

// TestCloseTwice: Close right after Start returns (the listener was not
// yet being served, so Shutdown did not close it and Close waited forever
// for the serve loop), and a second Close returns the first one's answer
// and does nothing more (it waited forever for a second serve result).
// The cleanup of startNode closes the node a third time.
func TestCloseTwice(t *testing.T) {
	n := nodetest.Start(t, node.Config{})
	done := make(chan [2]error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done <- [2]error{n.Close(ctx), n.Close(ctx)}
	}()
	select {
	case errs := <-done:
		if errs[0] != nil || errs[1] != nil {
			t.Fatalf("close: %v, then %v", errs[0], errs[1])
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the second Close did not return")
	}
}

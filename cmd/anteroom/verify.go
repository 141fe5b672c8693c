package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/anteroom/anteroom/queue"
)

// verify recomputes a position from the revealed seed, the window size and
// a sequence number, exactly as the service does.
func verify(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seedHex := fs.String("seed", "", "the event's revealed seed (64 lowercase hex characters)")
	window := fs.Int64("window", 0, "the frozen window size W")
	seq := fs.Int64("seq", 0, "your sequence number (from your ticket or join answer)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *seedHex == "" || *seq < 1 || *window < 0 {
		return errors.New("verify needs --seed, --window (≥ 0) and --seq (≥ 1)")
	}
	seed, err := queue.ParseSeedHex(*seedHex)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "commitment %s\n", queue.Commitment(seed))
	if *window == 0 || *seq > *window {
		fmt.Fprintf(stdout, "seq %d is outside the window: position %d\n", *seq, *seq)
		return nil
	}
	p, err := queue.NewPermutation(seed, *window)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "seq %d in a window of %d: position %d\n", *seq, *window, queue.Position(p, *seq))
	return nil
}

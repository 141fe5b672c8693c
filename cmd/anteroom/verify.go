package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/queue"
)

// verify recomputes a position from the revealed seed, the window size and
// a sequence number, exactly as the service does. For a sale of join
// shards it takes the published shard window sizes and the user (or the
// shard) instead of the window size. A lane member's seq (from the ticket
// or join answer) names the lane (queue.Laned): their position is the
// permutation of the lane's own window over their number within the lane,
// so --window is the lane's window size, keyed by the lane's own seed
// (queue.LaneSeed; --shared-lane-seed for an event created before lane
// seeds, whose lanes draw with the event's seed). With --event the figures
// come from the public event JSON instead (the lane's window by the seq,
// or by --lane; lane_seeds says which seed).
func verify(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seedHex := fs.String("seed", "", "the event's revealed seed (64 lowercase hex characters)")
	window := fs.Int64("window", 0, "the frozen window size W (a lane member: the lane's window_size)")
	seq := fs.Int64("seq", 0, "your sequence number (from your ticket or join answer; a lane member's names the lane)")
	shardWindows := fs.String("shard-windows", "", "with join shards: the published shard_window_sizes W_0,W_1,... (replaces --window)")
	user := fs.String("user", "", "with join shards: your user id (the ticket's sub), which picks your shard")
	shard := fs.Int("shard", -1, "with join shards: your shard, instead of --user")
	eventFile := fs.String("event", "", "the public event JSON (GET /events/{id}) saved in a file, or - for stdin: replaces --seed, --window and --shard-windows")
	laneName := fs.String("lane", "", "with --event: your lane's name (lanes[].name), so --seq may be your number within the lane")
	laneSeed := fs.Int("lane-seed", 0, "your lane's index (from 1) when --seq is your number within it: the lane's own seed draws its window (as the waiting room's verify command gives it)")
	shared := fs.Bool("shared-lane-seed", false, "a lane member of an event created before lane seeds (its JSON has no lane_seeds): the lane draws with the event's seed itself")
	if err := fs.Parse(args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	lane, n := queue.Unlane(*seq)
	if *laneSeed != 0 && (*laneSeed < 1 || *laneSeed > event.MaxLanes || lane != 0 && lane != *laneSeed) {
		return fmt.Errorf("verify: --lane-seed %d: want your lane's index, 1..%d, the lane your seq names", *laneSeed, event.MaxLanes)
	}
	if *laneSeed > 0 {
		lane = *laneSeed
	}
	switch {
	case *seq < 1 || n < 1 || lane > event.MaxLanes:
		return errors.New("verify needs --seq: your sequence number (≥ 1), as your ticket or join answer has it")
	case *eventFile != "" && (set["seed"] || set["window"] || set["shard-windows"] || set["shared-lane-seed"] || set["lane-seed"]):
		return errors.New("verify takes --event or --seed, --window and --shard-windows, not both")
	case *laneName != "" && *eventFile == "":
		return errors.New("verify --lane needs --event (or give the lane's window_size as --window)")
	}
	if *eventFile != "" {
		pub, err := readEvent(*eventFile)
		if err != nil {
			return err
		}
		if lane, err = pub.lane(lane, *laneName); err != nil {
			return err
		}
		if *seedHex, *window, *shardWindows, err = pub.figures(lane); err != nil {
			return err
		}
		*shared = !pub.LaneSeeds
		fmt.Fprintf(stdout, "event %s: the seed matches its seed_commitment\n", pub.ID)
	}
	if *seedHex == "" || *window < 0 {
		return errors.New("verify needs --seed, --window (≥ 0) and --seq (≥ 1), or --event and --seq")
	}
	seed, err := queue.ParseSeedHex(*seedHex)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "commitment %s\n", queue.Commitment(seed))
	index := n
	if lane > 0 {
		if *shardWindows != "" {
			return errors.New("verify: a lane member's seq with --shard-windows; lanes need join_shards 1")
		}
		fmt.Fprintf(stdout, "lane %d (its index in the event's lanes, from 1): number %d within the lane, whose window of %d orders its members\n", lane, n, *window)
		if !*shared {
			seed = queue.LaneSeed(seed, lane)
			fmt.Fprintf(stdout, "the lane draws with its own seed HMAC-SHA256(seed, \"anteroom/lane\" || byte(%d))\n", lane)
		}
	}
	if *shardWindows != "" {
		sizes, err := parseSizes(*shardWindows)
		if err != nil {
			return err
		}
		s := *shard
		if *user != "" {
			s = queue.ShardOf(*user, len(sizes))
		}
		if s < 0 || s >= len(sizes) {
			return fmt.Errorf("verify needs --user or --shard in 0..%d with --shard-windows", len(sizes)-1)
		}
		var offset int64
		for _, w := range sizes[:s] {
			offset += w
		}
		*window = offset
		for _, w := range sizes[s:] {
			*window += w
		}
		if *seq > sizes[s] {
			fmt.Fprintf(stdout, "seq %d of shard %d is outside its window of %d: a later joiner, placed after all %d of the window by arrival second\n", *seq, s, sizes[s], *window)
			return nil
		}
		index = offset + *seq
		fmt.Fprintf(stdout, "shard %d of %d, window of %d from index %d\n", s, len(sizes), sizes[s], offset+1)
	}
	if *window == 0 || index > *window {
		fmt.Fprintf(stdout, "seq %d is outside the window: position %d\n", index, index)
		return nil
	}
	p, err := queue.NewPermutation(seed, *window)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "seq %d in a window of %d: position %d\n", index, *window, queue.Position(p, index))
	return nil
}

// parseSizes reads comma-separated shard window sizes.
func parseSizes(s string) ([]int64, error) {
	parts := strings.Split(s, ",")
	if len(parts) > 256 {
		return nil, fmt.Errorf("--shard-windows: %d sizes, at most 256", len(parts))
	}
	out := make([]int64, len(parts))
	for i, p := range parts {
		n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
		if err != nil || n < 0 || n > 1<<40 {
			return nil, fmt.Errorf("--shard-windows: size %d is not a count", i+1)
		}
		out[i] = n
	}
	return out, nil
}

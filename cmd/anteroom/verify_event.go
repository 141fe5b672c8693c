package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/anteroom/anteroom/queue"
)

// publishedEvent is what verify reads of the public event JSON (GET
// /events/{id}, web/shopper/events.go).
type publishedEvent struct {
	ID             string  `json:"id"`
	SeedCommitment string  `json:"seed_commitment"`
	Seed           string  `json:"seed"`
	WindowSize     *int64  `json:"window_size"`
	ShardWindows   []int64 `json:"shard_window_sizes"`
	LaneSeeds      bool    `json:"lane_seeds"`
	Lanes          []struct {
		Name       string `json:"name"`
		WindowSize *int64 `json:"window_size"`
	} `json:"lanes"`
}

// maxEventJSON bounds the event JSON verify reads.
const maxEventJSON = 1 << 20

// readEvent reads the public event JSON from the file name, or stdin for
// "-".
func readEvent(name string) (*publishedEvent, error) {
	r := io.Reader(os.Stdin)
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("--event: %w", err)
		}
		defer f.Close()
		r = f
	}
	raw, err := io.ReadAll(io.LimitReader(r, maxEventJSON+1))
	if err != nil {
		return nil, fmt.Errorf("--event: %w", err)
	}
	if len(raw) > maxEventJSON {
		return nil, fmt.Errorf("--event: more than %d bytes: not an event's JSON", maxEventJSON)
	}
	var pub publishedEvent
	if err := json.Unmarshal(raw, &pub); err != nil {
		return nil, fmt.Errorf("--event: not the JSON of GET /events/{id}: %w", err)
	}
	if pub.ID == "" || pub.SeedCommitment == "" {
		return nil, fmt.Errorf("--event: no id or seed_commitment: not the JSON of GET /events/{id}")
	}
	return &pub, nil
}

// lane returns the lane (1-based, 0 for the default lane) of a seq of
// lane seqLane, given the lane's name (or ""): the name picks the lane of
// a number within it, and must agree with a seq that names its lane.
func (p *publishedEvent) lane(seqLane int, name string) (int, error) {
	if name == "" {
		return seqLane, nil
	}
	for i, l := range p.Lanes {
		if l.Name != name {
			continue
		}
		if seqLane != 0 && seqLane != i+1 {
			return 0, fmt.Errorf("verify: the seq is of lane %d, not of lane %d (%s)", seqLane, i+1, name)
		}
		return i + 1, nil
	}
	return 0, fmt.Errorf("verify: event %s has no lane %q", p.ID, name)
}

// figures returns the seed (checked against the commitment), the window
// size and the shard window sizes that order lane (0: the default lane)
// of the event.
func (p *publishedEvent) figures(lane int) (seed string, window int64, shards string, err error) {
	if p.Seed == "" {
		return "", 0, "", fmt.Errorf("verify: event %s has not revealed its seed yet: it does once its window closes", p.ID)
	}
	s, err := queue.ParseSeedHex(p.Seed)
	if err != nil {
		return "", 0, "", fmt.Errorf("verify: event %s: seed: %w", p.ID, err)
	}
	if queue.Commitment(s) != p.SeedCommitment {
		return "", 0, "", fmt.Errorf("verify: event %s: the seed's sha256 is not its seed_commitment %s", p.ID, p.SeedCommitment)
	}
	switch {
	case lane > len(p.Lanes):
		return "", 0, "", fmt.Errorf("verify: the seq is of lane %d, and event %s lists %d lanes", lane, p.ID, len(p.Lanes))
	case lane > 0 && p.Lanes[lane-1].WindowSize == nil:
		return "", 0, "", fmt.Errorf("verify: lane %d (%s) of event %s has no window_size yet: it is published once the lane starts", lane, p.Lanes[lane-1].Name, p.ID)
	case lane > 0:
		return p.Seed, *p.Lanes[lane-1].WindowSize, "", nil
	case len(p.ShardWindows) > 0:
		parts := make([]string, len(p.ShardWindows))
		for i, w := range p.ShardWindows {
			parts[i] = strconv.FormatInt(w, 10)
		}
		return p.Seed, 0, strings.Join(parts, ","), nil
	case p.WindowSize == nil:
		return "", 0, "", fmt.Errorf("verify: event %s has a seed but no window_size", p.ID)
	}
	return p.Seed, *p.WindowSize, "", nil
}

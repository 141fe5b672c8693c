package queue

import (
	"sort"
	"time"
)

// Order is one node's view of the global order of a queue spread over
// S > 1 join shards, built from reads of every shard (Joiner.ReadShard).
// Every node that has read the same shard state computes the same positions.
//
// The global order, complete definition (S = 1 is the unsharded queue):
//
//  1. A user is on shard s = FNV-1a-32(user) mod S and gets a sequence
//     number seq counted within the shard. The shard's window size W_s is
//     its count when its Redis TIME reached the window's end. The window is
//     frozen once every shard's is; W = W_0 + ... + W_{S-1}.
//  2. Window members (seq <= W_s) have the global index
//     g = W_0 + ... + W_{s-1} + seq, in 1..W, and the position π(g), π being
//     the permutation anteroom/v1 of 1..W keyed by the revealed seed.
//  3. Later joiners are ordered by their arrival second t (whole seconds
//     since the queue opened, by the shard's Redis TIME, as in the ticket's
//     iat minus the opening's unix second; never earlier than the shard's
//     previous later joiner's, should its clock step back), earlier
//     seconds first. Within one second, c_r is the number of later joiners
//     of shard r in second t and j the rank (1, 2, ...) of the user among
//     those of shard s in t, by seq. The shards are interleaved round by
//     round: position
//     W + B + sum over r of min(c_r, j-1) + #{r < s : c_r >= j} + 1,
//     where B counts the later joiners of all earlier seconds.
//
// A second is settled once every shard's Redis TIME has passed it; only
// then are its positions known, and the frontier counts only people in
// settled seconds, so a position is never admitted before it is final.
//
// An Order is immutable: Next returns a new one. Safe for concurrent use.
type Order struct {
	shards    int
	opens     int64           // the queue's opening, unix ms
	windows   []int64         // W_s, -1 while open
	offsets   []int64         // W_0 + ... + W_{s-1}, once frozen
	w         int64           // W, -1 until every shard froze
	read      []int           // seconds list entries read, per shard
	joined    []int64         // per shard count at the last read
	open      [][]SecondStart // entries of seconds not settled yet, per shard
	seconds   []Second        // settled seconds with later joiners, ascending
	settledTo int64           // every second before it is settled
	later     int64           // later joiners in settled seconds
}

// Second is one settled second's later joiners.
type Second struct {
	// At is the second, counted from the queue's opening.
	At int64
	// Before is how many later joiners arrived in earlier seconds.
	Before int64
	// First and Count give, per shard, the first sequence number and the
	// number of the shard's later joiners in the second (0, 0 for none).
	First, Count []int64
}

// NewOrder returns the empty view of a queue of shards join shards that
// opens at opens.
func NewOrder(shards int, opens time.Time) *Order {
	o := &Order{shards: shards, opens: opens.UnixMilli(), w: -1,
		windows: make([]int64, shards), read: make([]int, shards),
		joined: make([]int64, shards), open: make([][]SecondStart, shards)}
	for s := range o.windows {
		o.windows[s] = -1
	}
	return o
}

// Fits reports whether o is the view of a queue of shards join shards
// that opens at opens.
func (o *Order) Fits(shards int, opens time.Time) bool {
	return o.shards == shards && o.opens == opens.UnixMilli()
}

// ReadFrom returns the seconds list index to read shard s from next.
func (o *Order) ReadFrom(s int) int { return o.read[s] }

// Window returns W, or -1 until every shard's window froze.
func (o *Order) Window() int64 { return o.w }

// Windows returns a copy of the window sizes W_s (-1 for a shard still
// open): with the seed they are what verifying a window position needs.
func (o *Order) Windows() []int64 { return append([]int64(nil), o.windows...) }

// ShardWindow returns W_s, or -1 while shard s is open.
func (o *Order) ShardWindow(s int) int64 { return o.windows[s] }

// Joined returns how many people joined, as last read.
func (o *Order) Joined() int64 {
	var n int64
	for _, j := range o.joined {
		n += j
	}
	return n
}

// Settled returns how many people hold a final position: W plus the later
// joiners of settled seconds, 0 until the window froze. The frontier never
// passes it.
func (o *Order) Settled() int64 {
	if o.w < 0 {
		return 0
	}
	return o.w + o.later
}

// Next returns the view after reads, one per shard in shard order, each
// read from ReadFrom(s).
func (o *Order) Next(reads []ShardRead) *Order {
	n := *o
	n.windows = append([]int64(nil), o.windows...)
	n.read = append([]int(nil), o.read...)
	n.joined = append([]int64(nil), o.joined...)
	n.open = make([][]SecondStart, o.shards)
	settle := int64(1 << 62)
	for s, r := range reads {
		n.joined[s] = r.Joined
		if r.Window >= 0 {
			n.windows[s] = r.Window
		}
		n.open[s] = append(append([]SecondStart(nil), o.open[s]...), r.Starts...)
		n.read[s] += len(r.Starts)
		settle = min(settle, floorDiv(r.Now.UnixMilli()-o.opens, 1000))
	}
	if n.w < 0 {
		var sum int64
		offsets := make([]int64, o.shards)
		for s, w := range n.windows {
			if w < 0 {
				return &n
			}
			offsets[s] = sum
			sum += w
		}
		n.w, n.offsets = sum, offsets
	}
	if len(reads) != o.shards || settle <= n.settledTo {
		return &n
	}
	n.settle(settle)
	return &n
}

// settle moves every second before upto from the open entries into the
// settled seconds. Each entry's count runs to the shard's next entry or,
// for its last, to the shard's count: a read is one atomic step, so every
// join of a second before the shard's TIME is in both.
func (o *Order) settle(upto int64) {
	byAt := map[int64]*Second{}
	for s, es := range o.open {
		k := 0
		for k < len(es) && es[k].Second < upto {
			end := o.joined[s] + 1
			if k+1 < len(es) {
				end = es[k+1].First
			}
			sec := byAt[es[k].Second]
			if sec == nil {
				sec = &Second{At: es[k].Second, First: make([]int64, o.shards), Count: make([]int64, o.shards)}
				byAt[es[k].Second] = sec
			}
			sec.First[s], sec.Count[s] = es[k].First, end-es[k].First
			k++
		}
		o.open[s] = es[k:]
	}
	ats := make([]int64, 0, len(byAt))
	for at := range byAt {
		ats = append(ats, at)
	}
	sort.Slice(ats, func(i, j int) bool { return ats[i] < ats[j] })
	for _, at := range ats {
		sec := byAt[at]
		sec.Before = o.later
		for _, c := range sec.Count {
			o.later += c
		}
		// Appending never changes what an older Order's slice shows.
		o.seconds = append(o.seconds, *sec)
	}
	o.settledTo = upto
}

// Place is where a join put a user.
type Place struct {
	// Shard is the user's join shard (ShardOf).
	Shard int
	// Seq is the sequence number within the shard.
	Seq int64
	// Joined is when the user joined, in whole seconds (the ticket's iat).
	Joined time.Time
}

// Position returns the position of the user at p, given the permutation of
// the frozen window (p.Size() == Window()), or 0 while it is not known yet:
// the window not frozen, or the user's second not settled.
func (o *Order) Position(perm Permutation, p Place) int64 {
	if o.w < 0 || p.Shard < 0 || p.Shard >= o.shards || p.Seq < 1 {
		return 0
	}
	if p.Seq <= o.windows[p.Shard] {
		return perm.Apply(o.offsets[p.Shard] + p.Seq)
	}
	at := p.Joined.Unix() - floorDiv(o.opens, 1000)
	i := sort.Search(len(o.seconds), func(i int) bool { return o.seconds[i].At >= at })
	if i == len(o.seconds) || o.seconds[i].At != at {
		return 0
	}
	sec := &o.seconds[i]
	j := p.Seq - sec.First[p.Shard] + 1
	if sec.Count[p.Shard] == 0 || j < 1 || j > sec.Count[p.Shard] {
		return 0
	}
	rank := int64(1)
	for r, c := range sec.Count {
		rank += min(c, j-1)
		if r < p.Shard && c >= j {
			rank++
		}
	}
	return o.w + sec.Before + rank
}

// floorDiv is a / b rounded down.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// Locate is the inverse of Position: the shard and sequence number of the
// user at position pos, given the permutation of the frozen window. ok is
// false while pos is not known yet (the window not frozen, or pos past the
// settled seconds). Locate(perm, pos) is (p.Shard, p.Seq) for every Place
// p with Position(perm, p) = pos.
func (o *Order) Locate(perm Permutation, pos int64) (shard int, seq int64, ok bool) {
	if o.w < 0 || pos < 1 {
		return 0, 0, false
	}
	if pos <= o.w {
		g := perm.Inverse(pos)
		for s := o.shards - 1; s >= 0; s-- {
			if g > o.offsets[s] {
				return s, g - o.offsets[s], true
			}
		}
		return 0, 0, false
	}
	k := pos - o.w // 1-based among the later joiners
	i := sort.Search(len(o.seconds), func(i int) bool { return o.seconds[i].Before >= k }) - 1
	if i < 0 {
		return 0, 0, false
	}
	sec := &o.seconds[i]
	rank := k - sec.Before
	// Round j holds the shards r with Count[r] >= j, in shard order.
	for j := int64(1); rank > 0; j++ {
		in := false
		for r, c := range sec.Count {
			if c < j {
				continue
			}
			in = true
			if rank--; rank == 0 {
				return r, sec.First[r] + j - 1, true
			}
		}
		if !in {
			return 0, 0, false
		}
	}
	return 0, 0, false
}

// ShardTag is the key prefix of join shard s of event ev (every key of the
// shard shares its hash tag); other packages keep per-shard keys under it.
func ShardTag(ev string, s int) string { return shardTag(ev, s) }

package admission

import "time"

// mark is one sample of a frontier: F was at least f at Redis time at.
type mark struct {
	at time.Time
	f  int64
}

// staleFloor adds the frontier f read at Redis time now to the samples
// marks (oldest first, at most one a second) and returns the samples to
// keep and the stale floor: F as it was at least age ago, so every
// position at or below it was admitted longer than age ago. A sample is
// taken at most once a second, and a frontier that moved since its
// sample is not in it, so the floor is never above the truth (it errs on
// letting a late poll in). marks is never written: a new slice is built
// when it changes, so views that share it stay immutable.
func staleFloor(marks []mark, now time.Time, f int64, age time.Duration) ([]mark, int64) {
	cut := now.Add(-age)
	// Keep the newest sample at or before the cut (the floor) and all later.
	first := 0
	for first+1 < len(marks) && !marks[first+1].at.After(cut) {
		first++
	}
	kept := marks[first:]
	var floor int64
	if len(kept) > 0 && !kept[0].at.After(cut) {
		floor = kept[0].f
	}
	if n := len(kept); n == 0 || (now.Sub(kept[n-1].at) >= time.Second && f > kept[n-1].f) {
		next := make([]mark, len(kept), len(kept)+1)
		copy(next, kept)
		kept = append(next, mark{at: now, f: f})
	}
	return kept, floor
}

// TrackStale sets s.Stale, in a safety-net room, from the samples of the
// view before it (prev; nil for none) and s's own reading: positions at or
// below it were admitted longer than the admission TTL plus the no-show
// grace ago. Call it once, before s is published; outside a safety-net room
// it does nothing. prev is never written.
func (s *Sale) TrackStale(prev *Sale) {
	if !s.Config.IsSafetyNet() {
		return
	}
	var prevMarks []mark
	if prev != nil {
		prevMarks = prev.marks
	}
	ttl := time.Duration(s.Config.AdmissionTTLSeconds+s.Config.NoShowGraceSeconds) * time.Second
	s.marks, s.Stale = staleFloor(prevMarks, s.ServerTime, int64(s.Frontier), ttl)
}

package queue

import "testing"

// TestLaneTag pins the lane key layout: Lua scripts receive these keys
// from Go, and a changed prefix would orphan every lane of a running sale.
func TestLaneTag(t *testing.T) {
	tests := []struct {
		ev   string
		lane int
		want string
	}{
		{"sale", 0, "ar:{sale}:"},
		{"sale", 1, "ar:{sale}:l:1:"},
		{"sale", 12, "ar:{sale}:l:12:"},
	}
	for _, tt := range tests {
		if got := LaneTag(tt.ev, tt.lane); got != tt.want {
			t.Errorf("LaneTag(%q, %d) = %q, want %q", tt.ev, tt.lane, got, tt.want)
		}
	}
	if got, want := KeysForLane("sale", 2), (Keys{Seq: "ar:{sale}:l:2:seq", Window: "ar:{sale}:l:2:w", Fence: "ar:{sale}:l:2:sf"}); got != want {
		t.Errorf("KeysForLane(sale, 2) = %+v, want %+v", got, want)
	}
	if got, want := KeysForLane("sale", 0), KeysFor("sale"); got != want {
		t.Errorf("KeysForLane(sale, 0) = %+v, want KeysFor: %+v", got, want)
	}
}

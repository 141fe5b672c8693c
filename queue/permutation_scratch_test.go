package queue

import (
	"encoding/binary"
	"math"
	"testing"
)

func TestScratchMarginal(t *testing.T) {
	for _, w := range []int64{3, 5, 6, 7, 10, 16, 17, 33, 64, 65} {
		marg := make([][]int, w)
		for i := range marg {
			marg[i] = make([]int, w)
		}
		n := 300000
		for s := 0; s < n; s++ {
			seed := make([]byte, 32)
			binary.BigEndian.PutUint64(seed, uint64(s)+1<<40)
			p, _ := NewPermutation(seed, w)
			for x := int64(1); x <= w; x++ {
				marg[x-1][p.Apply(x)-1]++
			}
		}
		mchi := 0.0
		mexp := float64(n) / float64(w)
		for i := range w {
			for j := range w {
				d := float64(marg[i][j]) - mexp
				mchi += d * d / mexp
			}
		}
		dof := float64((w - 1) * (w - 1))
		t.Logf("rounds=%d k=%d W=%d marginal z=%.1f", permRounds, permMinK, w, (mchi-dof)/math.Sqrt(2*dof))
	}
}

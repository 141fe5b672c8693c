package queue_test

import (
	"fmt"

	"github.com/anteroom/anteroom/queue"
)

// ExamplePosition shuffles a frozen window of five joiners with the
// event's published seed: window members get a position in 1..5 in seed
// order, later joiners keep their sequence number, and 0 is never a
// position.
func ExamplePosition() {
	seed, err := queue.ParseSeedHex("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := queue.NewPermutation(seed, 5)
	if err != nil {
		fmt.Println(err)
		return
	}
	for seq := int64(0); seq <= 7; seq++ {
		fmt.Printf("seq %d -> position %d\n", seq, queue.Position(p, seq))
	}
	// Before the window freezes there is no permutation: position is seq.
	fmt.Println("unfrozen: seq 3 ->", queue.Position(queue.Permutation{}, 3))
	// Output:
	// seq 0 -> position 0
	// seq 1 -> position 3
	// seq 2 -> position 5
	// seq 3 -> position 4
	// seq 4 -> position 1
	// seq 5 -> position 2
	// seq 6 -> position 6
	// seq 7 -> position 7
	// unfrozen: seq 3 -> 3
}

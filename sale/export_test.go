package sale

import (
	"context"
	"strings"

	"github.com/anteroom/anteroom/admission"
)

// StepOne is one tick of event id alone, for tests that drive a sale tick
// by tick.
func (s *Snapshots) StepOne(ctx context.Context, id string) error {
	id = strings.Clone(id)
	prev, _ := s.Get(id)
	v, err := s.step(ctx, id, prev)
	if err != nil {
		return err
	}
	s.merge(map[string]*admission.Sale{id: v})
	return nil
}

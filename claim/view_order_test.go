package claim

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// viewMsg is one delivery of the view's ordered consumer: a subject, its
// stream sequence and the consumer that delivered it.
type viewMsg struct {
	jetstream.Msg
	subject, consumer string
	seq               uint64
}

func (m viewMsg) Subject() string { return m.subject }

func (m viewMsg) Metadata() (*jetstream.MsgMetadata, error) {
	return &jetstream.MsgMetadata{Sequence: jetstream.SequencePair{Stream: m.seq}, Consumer: m.consumer}, nil
}

// TestViewRecreatedConsumer: nats.go's ordered consumer records a message
// as delivered before its handler runs, and the consumer it recreates
// (missed heartbeats, a reconnect) starts after that message on another
// goroutine. Here a marker's delivery is still in the handler when the
// recreated consumer delivers a later grant: the view must not judge that
// grant (it would miss the marker and acknowledge a void grant); it reads
// the stream instead, and the view asks to be started again. Before the
// fix, the view judged the grant kept, and dropped the marker afterwards
// as a "redelivery". TestFenceViewR3 met this in CI runs under load.
func TestViewRecreatedConsumer(t *testing.T) {
	const ev = "recreated"
	release := make(chan struct{})
	held := make(chan struct{})
	v := newMarkerView(10, func(m jetstream.Msg) {
		if m.Subject() == EpochSubject(ev) {
			close(held)
			<-release
		}
	})
	// The consumer's first delivery, before the marker: a grant at 11.
	v.deliver(viewMsg{subject: Subject(ev, KindGranted), consumer: "view_1", seq: 11})
	markerDone := make(chan struct{})
	go func() {
		defer close(markerDone)
		v.deliver(viewMsg{subject: EpochSubject(ev), consumer: "view_1", seq: 12})
	}()
	<-held
	// The recreated consumer starts after the marker: the grant at 13,
	// decided on epoch 10, was stored after the marker at 12.
	v.deliver(viewMsg{subject: Subject(ev, KindGranted), consumer: "view_2", seq: 13})
	first, err := v.firstAfter(context.Background(), nil, ev, 10, 13, 50*time.Millisecond)
	if !errors.Is(err, errViewBehind) {
		t.Fatalf("grant at 13 judged from the view (first marker after epoch 10: %d, %v) while the marker at 12 was still in a handler; want errViewBehind (read the stream)", first, err)
	}
	close(release)
	<-markerDone
	if _, err := v.firstAfter(context.Background(), nil, ev, 10, 13, 50*time.Millisecond); !errors.Is(err, errViewBehind) {
		t.Fatalf("after the overtaken marker: %v, want errViewBehind until a new view starts", err)
	}
	select {
	case <-v.broken:
	default:
		t.Fatal("the view was not marked broken: followView would keep it")
	}
}

// TestViewOverlappingDeliveries: two deliveries at once from the same
// consumer name (the client reusing it) also break the view.
func TestViewOverlappingDeliveries(t *testing.T) {
	const ev = "overlap"
	release := make(chan struct{})
	held := make(chan struct{})
	v := newMarkerView(10, func(m jetstream.Msg) {
		if m.Subject() == EpochSubject(ev) {
			close(held)
			<-release
		}
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		v.deliver(viewMsg{subject: EpochSubject(ev), consumer: "view_1", seq: 11})
	}()
	<-held
	v.deliver(viewMsg{subject: Subject(ev, KindGranted), consumer: "view_1", seq: 12})
	if _, err := v.firstAfter(context.Background(), nil, ev, 10, 12, 50*time.Millisecond); !errors.Is(err, errViewBehind) {
		t.Fatalf("grant judged from a view whose deliveries overlapped: %v, want errViewBehind", err)
	}
	close(release)
	<-done
}

// TestViewInOrder: deliveries one at a time from one consumer judge from
// the view, the marker counted.
func TestViewInOrder(t *testing.T) {
	const ev = "inorder"
	v := newMarkerView(10, nil)
	v.deliver(viewMsg{subject: EpochSubject(ev), consumer: "view_1", seq: 11})
	v.deliver(viewMsg{subject: Subject(ev, KindGranted), consumer: "view_1", seq: 12})
	first, err := v.firstAfter(context.Background(), nil, ev, 10, 12, time.Second)
	if err != nil || first != 11 {
		t.Fatalf("firstAfter = %d, %v; want the marker at 11", first, err)
	}
}

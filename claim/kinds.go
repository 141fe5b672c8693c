package claim

// Kind is the type of an order event: the change of a claim it records.
// It is also the last element of the event's subject (see Subject).
type Kind string

// Order event kinds.
const (
	// KindGranted records a claim granted by claim.lua.
	KindGranted Kind = "granted"
	// KindReleased records a claim's unit returned to the stock.
	KindReleased Kind = "released"
	// KindCancelled records staff cancelling a granted claim, pending or
	// confirmed (cancel.go); its unit returned to the stock or not
	// (OrderEvent.Restock). Nats-Msg-Id "<claim id>:cancelled".
	KindCancelled Kind = "order_cancelled"
)

// Status is where a claim stands.
type Status string

// Claim statuses. A claim is pending from its grant until it is confirmed
// (the order worker recorded its order) or released; neither changes
// again, but staff may cancel a pending or confirmed claim.
const (
	StatusPending   Status = "pending"
	StatusConfirmed Status = "confirmed"
	StatusReleased  Status = "released"
	// StatusCancelled: staff cancelled the claim (pending or confirmed);
	// it never changes again.
	StatusCancelled Status = "cancelled"
	// StatusVoid is an order's status, never a claim's: its grant was
	// decided on stock a rebuild replaced (see the package doc's fence).
	StatusVoid Status = "void"
)

// Reason says why a claim was released.
type Reason string

// Release reasons.
const (
	ReasonUser    Reason = "user"    // its holder released it
	ReasonAdmin   Reason = "admin"   // staff released it
	ReasonExpired Reason = "expired" // it was not confirmed within the claim TTL
	// ReasonReconciled: reconciliation found it released in Redis with
	// no released event on the stream, and published one.
	ReasonReconciled Reason = "reconciled"
)

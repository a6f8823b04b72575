// Package reconcile is the skeleton every chain's reconcile shares. A Pass
// is one reconcile of one object: a working copy whose status the steps
// change, the status as stored, conditions set with an Event when they are
// news, intents written before the call they announce, and one tail that
// writes the status once and, if the steps succeeded and asked for it,
// brings the object back later. A chain describes its kind once (Kind) and
// starts a Pass per reconcile; its steps are plain functions of the pass.
package reconcile

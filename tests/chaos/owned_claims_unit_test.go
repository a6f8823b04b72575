package chaos

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	equinixv1 "github.com/harvester/harvester-equinix-addon/pkg/apis/equinix.harvesterhci.io/v1"
	seederv1alpha1 "github.com/harvester/harvester-equinix-addon/pkg/apis/metal.harvesterhci.io/v1alpha1"
)

// scriptedInventories answers the claim watch as an apiserver restarted
// twice would: the first stream ends (a restart), the next one is refused
// as too old at once (the restarted apiserver no longer has that version),
// and the relist finds a claim written meanwhile.
type scriptedInventories struct {
	mu      sync.Mutex
	watches int
	// secondOpened is when the stream that is refused was opened.
	secondOpened time.Time
	lists        int
}

func (s *scriptedInventories) List(_ context.Context, o metav1.ListOptions) (*seederv1alpha1.InventoryList, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	list := &seederv1alpha1.InventoryList{ListMeta: metav1.ListMeta{ResourceVersion: "10"}}
	if o.Limit > 0 {
		list.ResourceVersion = "30"
		return list, nil
	}
	s.lists++
	if s.lists > 1 {
		inv := seederv1alpha1.Inventory{ObjectMeta: metav1.ObjectMeta{Name: "own9-s1", ResourceVersion: "25",
			Annotations: map[string]string{equinixv1.AnnotationClaimUID: "claim-1"}}}
		list.ResourceVersion, list.Items = "30", []seederv1alpha1.Inventory{inv}
	}
	return list, nil
}

func (s *scriptedInventories) Watch(ctx context.Context, _ metav1.ListOptions) (watch.Interface, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watches++
	fw := watch.NewFake()
	switch s.watches {
	case 1:
		go fw.Stop()
	case 2:
		s.secondOpened = time.Now()
		gone := apierrors.NewResourceExpired("too old resource version")
		gone.ErrStatus.Code = http.StatusGone
		go func() {
			fw.Error(&gone.ErrStatus)
			fw.Stop()
		}()
	default:
		go func() {
			<-ctx.Done()
			fw.Stop()
		}()
	}
	return fw, nil
}

// A claim the watch finds on a relist counts from when the watch last
// broke while it was current, not from a later stream that was refused
// before it delivered anything: otherwise a server claimed and booted
// between two apiserver restarts seems booted outside its claim.
func TestClaimWatchCountsARelistedClaimFromTheFirstBreak(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := &claimTimeline{prefix: "own9-", changes: map[string][]claimChange{}, instances: map[string]*instanceSeen{}}
	invs := &scriptedInventories{}
	listed := make(chan struct{})
	go c.follow(ctx, invs, listed)
	<-listed
	require.Eventually(t, func() bool { return c.current("own9-s1") == "claim-1" }, 10*time.Second, 10*time.Millisecond)
	cancel()
	ws := c.windows("own9-s1")
	require.Len(t, ws, 1)
	invs.mu.Lock()
	defer invs.mu.Unlock()
	assert.True(t, ws[0].from.Before(invs.secondOpened),
		"the claim counts from %s, after the refused stream opened at %s", ws[0].from.Format("15:04:05.000000"), invs.secondOpened.Format("15:04:05.000000"))
}

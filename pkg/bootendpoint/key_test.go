package bootendpoint

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	corecontrollers "github.com/rancher/wrangler/v3/pkg/generated/controllers/core/v1"
)

// secrets is an apiserver's Secrets in miniature: Create refuses a name
// that exists, as the real one does. A racer's Secret can be put in
// between another replica's Get and Create.
type secrets struct {
	mu      sync.Mutex
	stored  map[string]*corev1.Secret
	creates int
	// beforeCreate runs at the start of Create.
	beforeCreate func()
}

var secretsResource = schema.GroupResource{Resource: "secrets"}

// The controller passes wrangler's Secret client.
var _ SecretClient = corecontrollers.SecretClient(nil)

func (s *secrets) Get(namespace, name string, _ metav1.GetOptions) (*corev1.Secret, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sec, ok := s.stored[namespace+"/"+name]; ok {
		return sec.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(secretsResource, name)
}

func (s *secrets) Create(sec *corev1.Secret) (*corev1.Secret, error) {
	if f := s.beforeCreate; f != nil {
		s.beforeCreate = nil
		f()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.creates++
	k := sec.Namespace + "/" + sec.Name
	if _, ok := s.stored[k]; ok {
		return nil, apierrors.NewAlreadyExists(secretsResource, sec.Name)
	}
	s.stored[k] = sec.DeepCopy()
	return sec, nil
}

func TestKeyIsCreatedOnceAndKept(t *testing.T) {
	ctx := context.Background()
	s := &secrets{stored: map[string]*corev1.Secret{}}
	k1, err := Key(ctx, s, "harvester-system")
	require.NoError(t, err)
	assert.Len(t, k1, KeySize)
	k2, err := Key(ctx, s, "harvester-system")
	require.NoError(t, err)
	assert.Equal(t, k1, k2, "a restart keeps the key, so open claims keep their URLs")
	assert.Equal(t, 1, s.creates)
	assert.Equal(t, k1, s.stored["harvester-system/"+KeySecretName].Data[KeySecretKey])
}

// Two replicas start at once: the one whose Create loses reads the
// winner's key, so both serve the same nonces.
func TestKeyRace(t *testing.T) {
	ctx := context.Background()
	s := &secrets{stored: map[string]*corev1.Secret{}}
	var winner []byte
	s.beforeCreate = func() {
		var err error
		winner, err = Key(ctx, s, "harvester-system")
		require.NoError(t, err)
	}
	loser, err := Key(ctx, s, "harvester-system")
	require.NoError(t, err)
	assert.Equal(t, winner, loser)
	assert.Equal(t, 2, s.creates)
}

func TestKeyRefusesAShortKey(t *testing.T) {
	s := &secrets{stored: map[string]*corev1.Secret{"ns/" + KeySecretName: {Data: map[string][]byte{KeySecretKey: []byte("short")}}}}
	_, err := Key(context.Background(), s, "ns")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "short", "the key is not in the message")
}

func TestNonce(t *testing.T) {
	a := Nonce(testKey, "uid-1")
	assert.Equal(t, a, Nonce(testKey, "uid-1"), "the same for every boot of a claim")
	assert.NotEqual(t, a, Nonce(testKey, "uid-2"), "another claim")
	assert.NotEqual(t, a, Nonce(append([]byte{1}, testKey[1:]...), "uid-1"), "another key")
	assert.Len(t, a, 43)
	assert.Regexp(t, `^[A-Za-z0-9_-]+$`, a, "a path segment as it is")
	assert.False(t, nonceMatches(testKey, "", Nonce(testKey, "")), "a claim without an ID has no nonce")
}

func TestNormalMAC(t *testing.T) {
	for _, in := range []string{"0c:c4:7a:29:00:01", "0C:C4:7A:29:00:01", "0c-c4-7a-29-00-01", "0cc47a290001", " 0cc4.7a29.0001 "} {
		got, ok := normalMAC(in)
		assert.True(t, ok, in)
		assert.Equal(t, "0c:c4:7a:29:00:01", got, in)
	}
	for _, in := range []string{"", "0cc47a29000", "0cc47a29000z", "0c:c4:7a:29:00:01:00:00", "${mac}"} {
		_, ok := normalMAC(in)
		assert.False(t, ok, in)
	}
	assert.True(t, sameUUID("4C4C4544-0042-3510-8052-B4C04F4E3332", "4c4c4544-0042-3510-8052-b4c04f4e3332"))
	assert.False(t, sameUUID("", ""))
}

package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +genclient:nonNamespaced
// +genclient:onlyVerbs=get,list,watch
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Setting is Harvester's cluster-scoped settings.harvesterhci.io object. The addon
// reads `server-version` to pin the installer artifacts to the cluster's release.
type Setting struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Default string `json:"default,omitempty"`
	Value   string `json:"value,omitempty"`
}

// EffectiveValue mirrors Harvester's own rule: an explicit value wins over the default.
func (s *Setting) EffectiveValue() string {
	if s.Value != "" {
		return s.Value
	}
	return s.Default
}

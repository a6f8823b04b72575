package health

import (
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/harvester/harvester-equinix-addon/pkg/config"
)

type configT = config.Config

func ptrIntOrString(n int32) *intstr.IntOrString {
	v := intstr.FromInt32(n)
	return &v
}

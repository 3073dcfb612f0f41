package specs

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestFamilies: addresses and CIDRs of both families, in order, and
// nothing guessed for what does not parse.
func TestFamilies(t *testing.T) {
	got := families([]string{"10.1.2.3", "fd00:100:96::/48", "192.168.0.0/24", "fc00:f853:ccd:e793::3", "::ffff:10.0.0.1", "not-an-ip"})
	want := []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol, corev1.IPv4Protocol, corev1.IPv6Protocol, corev1.IPv4Protocol, ""}
	if !slices.Equal(got, want) {
		t.Errorf("families = %v, want %v", got, want)
	}
}

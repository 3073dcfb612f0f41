package specs

import (
	"strings"
	"testing"
)

func TestUnservedServiceRules(t *testing.T) {
	got, err := UnservedServiceRules([]string{"10.128.0.0/12", "fd00:10:96::1/112"})
	if err != nil {
		t.Fatal(err)
	}
	want := `add table inet capd-e2e-unserved-services
delete table inet capd-e2e-unserved-services
table inet capd-e2e-unserved-services {
	chain forward {
		type filter hook forward priority filter - 10; policy accept;
		ip daddr 10.128.0.0/12 reject comment "capd-e2e: reject unserved Service traffic"
		ip6 daddr fd00:10:96::/112 reject comment "capd-e2e: reject unserved Service traffic"
	}
	chain output {
		type filter hook output priority filter - 10; policy accept;
		ip daddr 10.128.0.0/12 reject comment "capd-e2e: reject unserved Service traffic"
		ip6 daddr fd00:10:96::/112 reject comment "capd-e2e: reject unserved Service traffic"
	}
}
`
	if got != want {
		t.Errorf("rules:\n%s\nwant:\n%s", got, want)
	}
	if _, err := UnservedServiceRules([]string{"10.128.0.0/33"}); err == nil || !strings.Contains(err.Error(), `"10.128.0.0/33"`) {
		t.Errorf("a bad CIDR gave %v, want an error naming it", err)
	}
}

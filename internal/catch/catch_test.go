package catch

import (
	"errors"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func TestRun(t *testing.T) {
	RegisterTestingT(t) // as under Ginkgo: a fail handler is registered
	if err := Run(func() {}); err != nil {
		t.Errorf("no failure: %v", err)
	}
	err := Run(func() {
		Expect(errors.New("write x: no space left on device")).To(Succeed(), "Failed to write manifest")
	})
	if err == nil || !strings.Contains(err.Error(), "Failed to write manifest") || !strings.Contains(err.Error(), "no space left on device") {
		t.Errorf("Gomega failure: error = %v, want its message", err)
	}
	err = Run(func() { panic("\x1b[1m\x1b[38;5;9mboom\x1b[0m") })
	if err == nil || err.Error() != "boom" {
		t.Errorf("panic: error = %q, want it without terminal codes", err)
	}
}

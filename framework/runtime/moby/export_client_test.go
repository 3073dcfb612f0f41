package moby

import "github.com/moby/moby/client"

// ClientOf exposes the Moby client under r to the external test package, for
// the benchmark that times an exec's round trips one by one.
func ClientOf(r *Runtime) *client.Client { return r.c }

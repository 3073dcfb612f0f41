package moby

// ThawGroups thaws the frozen cgroups of container id (its full ID) on
// this host, as RemoveContainer does when the engine cannot kill it. Tests
// use it to clean up when the code under test failed.
func ThawGroups(id string) ([]string, error) { return hostThawer.thaw(id) }

// CgroupsOf returns the cgroups on this host named after container id, in
// the hierarchies that can freeze.
func CgroupsOf(id string) ([]string, error) { return hostThawer.containerGroups(id) }

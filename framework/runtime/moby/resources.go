package moby

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/moby/moby/client"

	"github.com/capd-e2e/capd-e2e/framework/runtime"
)

// CreateNetwork implements runtime.Resources.
func (r *Runtime) CreateNetwork(ctx context.Context, name string, labels map[string]string) (string, error) {
	res, err := r.c.NetworkCreate(ctx, name, client.NetworkCreateOptions{Driver: "bridge", Labels: labels})
	if err != nil {
		return "", r.wrap(err, "create network %q", name)
	}
	return res.ID, nil
}

// ListNetworks implements runtime.Resources.
func (r *Runtime) ListNetworks(ctx context.Context, f runtime.Filter) ([]runtime.Network, error) {
	res, err := r.c.NetworkList(ctx, client.NetworkListOptions{Filters: filters(f)})
	if err != nil {
		return nil, r.wrap(err, "list networks")
	}
	out := make([]runtime.Network, 0, len(res.Items))
	for _, n := range res.Items {
		out = append(out, runtime.Network{ID: n.ID, Name: n.Name, Driver: n.Driver, Labels: n.Labels})
	}
	slices.SortFunc(out, func(a, b runtime.Network) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// RemoveNetwork implements runtime.Resources.
func (r *Runtime) RemoveNetwork(ctx context.Context, nameOrID string) error {
	if _, err := r.c.NetworkRemove(ctx, nameOrID, client.NetworkRemoveOptions{}); err != nil {
		err = r.wrap(err, "remove network %q", nameOrID)
		if errors.Is(err, runtime.ErrNotFound) {
			return nil
		}
		return err
	}
	return nil
}

// ConnectNetwork implements runtime.Resources.
func (r *Runtime) ConnectNetwork(ctx context.Context, network, container string) error {
	if _, err := r.c.NetworkConnect(ctx, network, client.NetworkConnectOptions{Container: container}); err != nil {
		return r.wrap(err, "connect container %q to network %q", container, network)
	}
	return nil
}

// DisconnectNetwork implements runtime.Resources.
func (r *Runtime) DisconnectNetwork(ctx context.Context, network, container string) error {
	if _, err := r.c.NetworkDisconnect(ctx, network, client.NetworkDisconnectOptions{Container: container, Force: true}); err != nil {
		return r.wrap(err, "disconnect container %q from network %q", container, network)
	}
	return nil
}

// CreateVolume implements runtime.Resources.
func (r *Runtime) CreateVolume(ctx context.Context, name string, labels map[string]string) error {
	if _, err := r.c.VolumeCreate(ctx, client.VolumeCreateOptions{Name: name, Labels: labels}); err != nil {
		return r.wrap(err, "create volume %q", name)
	}
	return nil
}

// ListVolumes implements runtime.Resources.
func (r *Runtime) ListVolumes(ctx context.Context, f runtime.Filter) ([]runtime.Volume, error) {
	res, err := r.c.VolumeList(ctx, client.VolumeListOptions{Filters: filters(f)})
	if err != nil {
		return nil, r.wrap(err, "list volumes")
	}
	out := make([]runtime.Volume, 0, len(res.Items))
	for _, v := range res.Items {
		out = append(out, runtime.Volume{Name: v.Name, Driver: v.Driver, Labels: v.Labels})
	}
	slices.SortFunc(out, func(a, b runtime.Volume) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// RemoveVolume implements runtime.Resources.
func (r *Runtime) RemoveVolume(ctx context.Context, name string) error {
	if _, err := r.c.VolumeRemove(ctx, name, client.VolumeRemoveOptions{Force: true}); err != nil {
		err = r.wrap(err, "remove volume %q", name)
		if errors.Is(err, runtime.ErrNotFound) {
			return nil
		}
		return err
	}
	return nil
}

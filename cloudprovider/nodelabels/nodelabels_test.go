package nodelabels

import (
	"context"
	"errors"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	cloudprovider "k8s.io/cloud-provider"
	cloudproviderapi "k8s.io/cloud-provider/api"
)

// instances answers InstanceMetadata from a map; a missing node is an
// error, as when the engine is unreachable.
type instances struct {
	cloudprovider.InstancesV2
	md    map[string]*cloudprovider.InstanceMetadata
	calls int
}

func (i *instances) InstanceMetadata(_ context.Context, n *v1.Node) (*cloudprovider.InstanceMetadata, error) {
	i.calls++
	if md, ok := i.md[n.Name]; ok {
		return md, nil
	}
	return nil, errors.New("engine unavailable")
}

func node(name string, labels map[string]string, taints ...v1.Taint) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: v1.NodeSpec{Taints: taints}}
}

var uninitialized = v1.Taint{Key: cloudproviderapi.TaintExternalCloudProvider, Effect: v1.TaintEffectNoSchedule}

func TestSync(t *testing.T) {
	md := &cloudprovider.InstanceMetadata{InstanceType: "docker-worker", Zone: "docker-default", Region: "docker"}
	for _, tc := range []struct {
		name      string
		node      *v1.Node
		want      map[string]string // labels after Sync
		wantCalls int
		wantErr   bool
	}{{
		name: "initialised by CAPD, no labels: all six set",
		node: node("w1", map[string]string{"kubernetes.io/hostname": "w1"}),
		want: map[string]string{
			"kubernetes.io/hostname":        "w1",
			v1.LabelInstanceTypeStable:      "docker-worker",
			v1.LabelInstanceType:            "docker-worker",
			v1.LabelTopologyZone:            "docker-default",
			v1.LabelFailureDomainBetaZone:   "docker-default",
			v1.LabelTopologyRegion:          "docker",
			v1.LabelFailureDomainBetaRegion: "docker",
		},
		wantCalls: 1,
	}, {
		name:      "still tainted: the cloud-node controller's, untouched",
		node:      node("w1", nil, uninitialized),
		want:      nil,
		wantCalls: 0,
	}, {
		name: "already labelled: no call, no change",
		node: node("w1", map[string]string{v1.LabelInstanceTypeStable: "x", v1.LabelTopologyZone: "z", v1.LabelTopologyRegion: "r"}),
		want: map[string]string{v1.LabelInstanceTypeStable: "x", v1.LabelTopologyZone: "z", v1.LabelTopologyRegion: "r"},
	}, {
		name: "a zone set by someone else is kept",
		node: node("w1", map[string]string{v1.LabelTopologyZone: "mine"}),
		want: map[string]string{
			v1.LabelTopologyZone:            "mine",
			v1.LabelInstanceTypeStable:      "docker-worker",
			v1.LabelInstanceType:            "docker-worker",
			v1.LabelFailureDomainBetaZone:   "docker-default",
			v1.LabelTopologyRegion:          "docker",
			v1.LabelFailureDomainBetaRegion: "docker",
		},
		wantCalls: 1,
	}, {
		name:      "metadata unavailable: an error, to retry",
		node:      node("gone", nil),
		want:      nil,
		wantCalls: 1,
		wantErr:   true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			client := fake.NewClientset(tc.node)
			inf := informers.NewSharedInformerFactory(client, 0)
			in := &instances{md: map[string]*cloudprovider.InstanceMetadata{"w1": md}}
			c, err := New(inf.Core().V1().Nodes(), client, in)
			if err != nil {
				t.Fatal(err)
			}
			inf.Start(ctx.Done())
			inf.WaitForCacheSync(ctx.Done())
			err = c.Sync(ctx, tc.node.Name)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Sync = %v, want error %v", err, tc.wantErr)
			}
			if in.calls != tc.wantCalls {
				t.Errorf("InstanceMetadata called %d times, want %d", in.calls, tc.wantCalls)
			}
			got, err := client.CoreV1().Nodes().Get(ctx, tc.node.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Labels) != len(tc.want) {
				t.Fatalf("labels %v, want %v", got.Labels, tc.want)
			}
			for k, v := range tc.want {
				if got.Labels[k] != v {
					t.Errorf("label %s = %q, want %q", k, got.Labels[k], v)
				}
			}
		})
	}
}

func TestSyncOfAMissingNodeIsDone(t *testing.T) {
	client := fake.NewClientset()
	inf := informers.NewSharedInformerFactory(client, 0)
	c, err := New(inf.Core().V1().Nodes(), client, &instances{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Sync(context.Background(), "nope"); err != nil {
		t.Fatalf("Sync of a deleted node = %v, want nil", err)
	}
}

// TestRunLabelsANodeCAPDInitialised runs the controller: a Node added
// without the taint and without labels gets them.
func TestRunLabelsANodeCAPDInitialised(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset()
	inf := informers.NewSharedInformerFactory(client, 0)
	in := &instances{md: map[string]*cloudprovider.InstanceMetadata{"w1": {InstanceType: "docker-worker", Zone: "z", Region: "r"}}}
	c, err := New(inf.Core().V1().Nodes(), client, in)
	if err != nil {
		t.Fatal(err)
	}
	inf.Start(ctx.Done())
	go c.Run(ctx)
	if _, err := client.CoreV1().Nodes().Create(ctx, node("w1", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var n *v1.Node
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		n, err = client.CoreV1().Nodes().Get(ctx, "w1", metav1.GetOptions{})
		return err == nil && n.Labels[v1.LabelInstanceTypeStable] == "docker-worker", nil
	})
	if err != nil {
		t.Fatalf("node not labelled within 10s: %v (last seen %v)", err, n)
	}
}

func TestNewWithoutInstancesV2(t *testing.T) {
	client := fake.NewClientset()
	inf := informers.NewSharedInformerFactory(client, 0)
	if _, err := New(inf.Core().V1().Nodes(), client, nil); err == nil {
		t.Fatal("New without InstancesV2 did not fail")
	}
}

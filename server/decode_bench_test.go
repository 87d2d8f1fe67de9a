package server

import (
	"runtime"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkDecodeAmplification decodes, for the requests whose lists can
// be longest, a frame of a million near-empty elements (the cheapest on
// the wire, the costliest decoded) and prints the bytes kmsg allocated
// per frame byte beside decodeFactor, the charge the decode budget takes.
func BenchmarkDecodeAmplification(b *testing.B) {
	const n = 1 << 20
	cases := []struct {
		name string
		req  func() kmsg.Request
	}{
		{"CreateTopics", func() kmsg.Request {
			r := kmsg.NewPtrCreateTopicsRequest()
			r.Topics = make([]kmsg.CreateTopicsRequestTopic, n)
			return r
		}},
		{"DeleteTopics", func() kmsg.Request {
			r := kmsg.NewPtrDeleteTopicsRequest()
			r.Topics = make([]kmsg.DeleteTopicsRequestTopic, n)
			return r
		}},
		{"CreatePartitions", func() kmsg.Request {
			r := kmsg.NewPtrCreatePartitionsRequest()
			r.Topics = make([]kmsg.CreatePartitionsRequestTopic, n)
			return r
		}},
		{"AlterPartition", func() kmsg.Request {
			r := kmsg.NewPtrAlterPartitionRequest()
			r.Topics = []kmsg.AlterPartitionRequestTopic{{Partitions: make([]kmsg.AlterPartitionRequestTopicPartition, n)}}
			return r
		}},
		{"AlterPartitionReassignments", func() kmsg.Request {
			r := kmsg.NewPtrAlterPartitionAssignmentsRequest()
			r.Topics = []kmsg.AlterPartitionAssignmentsRequestTopic{{Partitions: make([]kmsg.AlterPartitionAssignmentsRequestTopicPartition, n)}}
			return r
		}},
		{"ListPartitionReassignments", func() kmsg.Request {
			r := kmsg.NewPtrListPartitionReassignmentsRequest()
			r.Topics = make([]kmsg.ListPartitionReassignmentsRequestTopic, n)
			return r
		}},
		{"IncrementalAlterConfigs", func() kmsg.Request {
			r := kmsg.NewPtrIncrementalAlterConfigsRequest()
			r.Resources = make([]kmsg.IncrementalAlterConfigsRequestResource, n)
			return r
		}},
		{"AlterConfigs", func() kmsg.Request {
			r := kmsg.NewPtrAlterConfigsRequest()
			r.Resources = make([]kmsg.AlterConfigsRequestResource, n)
			return r
		}},
		{"DescribeConfigs", func() kmsg.Request {
			r := kmsg.NewPtrDescribeConfigsRequest()
			r.Resources = make([]kmsg.DescribeConfigsRequestResource, n)
			return r
		}},
		{"ElectLeaders", func() kmsg.Request {
			r := kmsg.NewPtrElectLeadersRequest()
			r.Topics = make([]kmsg.ElectLeadersRequestTopic, n)
			return r
		}},
		{"AssignReplicasToDirs", func() kmsg.Request {
			r := kmsg.NewPtrAssignReplicasToDirsRequest()
			r.Directories = make([]kmsg.AssignReplicasToDirsRequestDirectory, n)
			return r
		}},
		{"Fetch", func() kmsg.Request {
			r := kmsg.NewPtrFetchRequest()
			r.Topics = []kmsg.FetchRequestTopic{{Partitions: make([]kmsg.FetchRequestTopicPartition, n)}}
			return r
		}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			req := c.req()
			req.SetVersion(req.MaxVersion())
			body := req.AppendTo(nil)
			var factor float64
			for range b.N {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				got := kmsg.RequestForKey(req.Key())
				got.SetVersion(req.GetVersion())
				if err := got.ReadFrom(body); err != nil {
					b.Fatal(err)
				}
				runtime.ReadMemStats(&after)
				factor = float64(after.TotalAlloc-before.TotalAlloc) / float64(len(body))
				runtime.KeepAlive(got)
			}
			b.ReportMetric(factor, "decoded/frame")
			b.Logf("%s v%d: %d frame bytes decode into %.1fx that; the decode budget charges %dx", c.name, req.GetVersion(), len(body), factor, decodeFactor)
			if factor > decodeFactor {
				b.Errorf("%s decodes into %.1fx its frame, over decodeFactor %d", c.name, factor, decodeFactor)
			}
		})
	}
}

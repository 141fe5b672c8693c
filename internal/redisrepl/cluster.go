package redisrepl

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// clusterSlots is the number of a Redis Cluster's hash slots.
const clusterSlots = 16384

// clusterMarker is the marker key for cluster master m: in the first slot
// m serves (CLUSTER NODES, its "myself" line), so m takes the write.
func clusterMarker(ctx context.Context, m *redis.Client) (string, error) {
	nodes, err := m.ClusterNodes(ctx).Result()
	if err != nil {
		return "", fmt.Errorf("redisrepl: cluster nodes of %s: %w", m.Options().Addr, err)
	}
	for _, line := range strings.Split(nodes, "\n") {
		f := strings.Fields(line)
		if len(f) < 8 || !strings.Contains(f[2], "myself") {
			continue
		}
		for _, r := range f[8:] {
			if strings.HasPrefix(r, "[") { // a slot being migrated or imported
				continue
			}
			first, _, _ := strings.Cut(r, "-")
			slot, err := strconv.Atoi(first)
			if err == nil && slot >= 0 && slot < clusterSlots {
				return markerPrefix + ":{" + tagFor(slot) + "}", nil
			}
		}
		return "", fmt.Errorf("redisrepl: cluster master %s serves no slot", m.Options().Addr)
	}
	return "", fmt.Errorf("redisrepl: cluster master %s does not list itself", m.Options().Addr)
}

// tagFor is a hash tag whose key slot is slot: the smallest decimal
// number that hashes there (about 16,384 tries on average).
func tagFor(slot int) string {
	for i := 0; ; i++ {
		tag := strconv.Itoa(i)
		if int(crc16(tag))%clusterSlots == slot {
			return tag
		}
	}
}

// crc16 is the CRC-16/XMODEM of s, the checksum Redis Cluster's key
// slots are taken from.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

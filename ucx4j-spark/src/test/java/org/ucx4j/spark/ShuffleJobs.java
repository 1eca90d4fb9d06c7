package org.ucx4j.spark;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.spark.HashPartitioner;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaSparkContext;
import scala.Tuple2;

/**
 * The shuffle jobs the tests compare between {@code local} mode (Spark's own shuffle, no network) and a
 * {@code local-cluster} whose executors shuffle over ucx4j: a sort, a group-by, a join, a skewed
 * aggregation and a shuffle into mostly empty partitions. Each returns a plain Java value that
 * {@code equals} compares.
 */
final class ShuffleJobs {
    static final int RECORDS = 60_000;
    static final int MAP_PARTITIONS = 6;

    private ShuffleJobs() {}

    /** Every job's result, by name. */
    static Map<String, Object> runAll(JavaSparkContext sc) {
        Map<String, Object> results = new TreeMap<>();
        results.put("sort", sort(sc));
        results.put("group-by", groupBy(sc));
        results.put("join", join(sc));
        results.put("skewed", skewed(sc));
        results.put("empty-partitions", emptyPartitions(sc));
        return results;
    }

    static JavaPairRDD<Long, Long> pairs(JavaSparkContext sc, int records, int keys) {
        List<Integer> seeds = new ArrayList<>();
        for (int p = 0; p < MAP_PARTITIONS; p++) {
            seeds.add(p);
        }
        return sc.parallelize(seeds, MAP_PARTITIONS).flatMapToPair(p -> {
            List<Tuple2<Long, Long>> out = new ArrayList<>();
            for (long i = p; i < records; i += MAP_PARTITIONS) {
                out.add(new Tuple2<>((i * 7919L) % keys, i));
            }
            return out.iterator();
        });
    }

    /** Sorted by key over 4 ranges; the whole sequence of (key, value) in order. */
    static List<String> sort(JavaSparkContext sc) {
        return pairs(sc, RECORDS, 1_000_003)
                .mapToPair(t -> new Tuple2<>(t._1() * 1_000_000L + t._2(), t._2()))
                .sortByKey(true, 4)
                .map(t -> t._1() + "=" + t._2())
                .collect();
    }

    /** Sum and count per key, with map-side combine. */
    static Map<Long, String> groupBy(JavaSparkContext sc) {
        return new TreeMap<>(pairs(sc, RECORDS, 997)
                .mapValues(v -> new long[] {v, 1})
                .reduceByKey((a, b) -> new long[] {a[0] + b[0], a[1] + b[1]}, 5)
                .mapValues(a -> a[0] + "/" + a[1])
                .collectAsMap());
    }

    /** An inner join of two shuffled data sets, summarised per key. */
    static Map<Long, Long> join(JavaSparkContext sc) {
        JavaPairRDD<Long, Long> left = pairs(sc, RECORDS / 2, 2003);
        JavaPairRDD<Long, Long> right = pairs(sc, RECORDS / 3, 1009).mapValues(v -> v * 3);
        return new TreeMap<>(left.join(right, 4)
                .mapValues(t -> t._1() ^ t._2())
                .reduceByKey(Long::sum)
                .collectAsMap());
    }

    /** Four fifths of the records on one key, grouped without map-side combine: one block dominates. */
    static Map<Long, String> skewed(JavaSparkContext sc) {
        return new TreeMap<>(pairs(sc, RECORDS, 1_000)
                .mapToPair(t -> new Tuple2<>(t._2() % 5 == 0 ? t._1() : 0L, t._2()))
                .groupByKey(3)
                .mapValues(vs -> {
                    long n = 0, sum = 0;
                    for (long v : vs) {
                        n++;
                        sum += v;
                    }
                    return n + "/" + sum;
                })
                .collectAsMap());
    }

    /** Three keys into 16 partitions: most reduce partitions and most blocks are empty. */
    static List<String> emptyPartitions(JavaSparkContext sc) {
        return pairs(sc, RECORDS / 10, 3)
                .partitionBy(new HashPartitioner(16))
                .mapPartitionsWithIndex(
                        (index, it) -> {
                            long n = 0, sum = 0;
                            while (it.hasNext()) {
                                n++;
                                sum += it.next()._2();
                            }
                            return List.of(index + ":" + n + "/" + sum).iterator();
                        },
                        true)
                .collect();
    }
}

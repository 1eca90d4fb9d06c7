package org.ucx4j.spark;

import org.apache.spark.Aggregator;
import org.apache.spark.InterruptibleIterator;
import org.apache.spark.MapOutputTracker;
import org.apache.spark.ShuffleDependency;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.internal.config.package$;
import org.apache.spark.io.CompressionCodec;
import org.apache.spark.io.CompressionCodec$;
import org.apache.spark.serializer.SerializerInstance;
import org.apache.spark.serializer.SerializerManager;
import org.apache.spark.shuffle.BaseShuffleHandle;
import org.apache.spark.shuffle.ShuffleReadMetricsReporter;
import org.apache.spark.shuffle.ShuffleReader;
import org.apache.spark.shuffle.checksum.RowBasedChecksum;
import org.apache.spark.storage.BlockManager;
import org.apache.spark.storage.ShuffleBlockFetcherIterator;
import org.apache.spark.util.CompletionIterator$;
import org.apache.spark.util.SystemClock;
import org.apache.spark.util.collection.ExternalSorter;
import scala.Option;
import scala.Product2;
import scala.Tuple2;
import scala.collection.Iterator;
import scala.runtime.BoxedUnit;

/**
 * Spark's {@code BlockStoreShuffleReader}, step for step, with one change: the
 * {@link ShuffleBlockFetcherIterator} fetches remote blocks through our {@link UcxBlockStoreClient}
 * instead of the block manager's Netty client. Local (and, with {@code spark.shuffle.readHostLocalDisk},
 * host-local) blocks are read from disk as before; Spark's limits on what is in flight
 * ({@code spark.reducer.maxSizeInFlight}, {@code maxReqsInFlight}, {@code maxBlocksInFlightPerAddress}),
 * its corruption detection and its shuffle checksums apply unchanged, and its fetch failures become
 * {@code FetchFailedException}s as always.
 *
 * <p>Threading: one per reduce task, used by that task's thread.
 *
 * @param <K> key type
 * @param <C> combined value type
 */
final class UcxShuffleReader<K, C> implements ShuffleReader<K, C> {
    private final BaseShuffleHandle<K, ?, C> handle;
    private final Iterator<
                    Tuple2<
                            org.apache.spark.storage.BlockManagerId,
                            scala.collection.Seq<scala.Tuple3<org.apache.spark.storage.BlockId, Object, Object>>>>
            blocksByAddress;
    private final TaskContext context;
    private final ShuffleReadMetricsReporter readMetrics;
    private final UcxBlockStoreClient client;
    private final boolean shouldBatchFetch;

    UcxShuffleReader(
            BaseShuffleHandle<K, ?, C> handle,
            Iterator<
                            Tuple2<
                                    org.apache.spark.storage.BlockManagerId,
                                    scala.collection.Seq<
                                            scala.Tuple3<org.apache.spark.storage.BlockId, Object, Object>>>>
                    blocksByAddress,
            TaskContext context,
            ShuffleReadMetricsReporter readMetrics,
            UcxBlockStoreClient client,
            boolean shouldBatchFetch) {
        this.handle = handle;
        this.blocksByAddress = blocksByAddress;
        this.context = context;
        this.readMetrics = readMetrics;
        this.client = client;
        this.shouldBatchFetch = shouldBatchFetch;
    }

    private boolean fetchContinuousBlocksInBatch(SparkConf conf, ShuffleDependency<K, ?, C> dep) {
        boolean compressed = (Boolean) conf.get(package$.MODULE$.SHUFFLE_COMPRESS());
        boolean codecConcatenation = !compressed
                || CompressionCodec$.MODULE$.supportsConcatenationOfSerializedStreams(
                        CompressionCodec.createCodec(conf));
        return shouldBatchFetch
                && dep.serializer().supportsRelocationOfSerializedObjects()
                && codecConcatenation
                && !(Boolean) conf.get(package$.MODULE$.SHUFFLE_USE_OLD_FETCH_PROTOCOL())
                && !(Boolean) conf.get(package$.MODULE$.IO_ENCRYPTION_ENABLED());
    }

    @Override
    @SuppressWarnings({"unchecked", "rawtypes"})
    public Iterator<Product2<K, C>> read() {
        SparkEnv env = SparkEnv.get();
        SparkConf conf = env.conf();
        package$ config = package$.MODULE$;
        ShuffleDependency<K, ?, C> dep = handle.dependency();
        BlockManager blockManager = env.blockManager();
        MapOutputTracker mapOutputTracker = env.mapOutputTracker();
        SerializerManager serializerManager = env.serializerManager();
        Iterator<Tuple2<org.apache.spark.storage.BlockId, java.io.InputStream>> wrappedStreams =
                new ShuffleBlockFetcherIterator(
                                context,
                                client,
                                blockManager,
                                mapOutputTracker,
                                blocksByAddress,
                                serializerManager::wrapStream,
                                // getSizeAsMb when no suffix is given, as Spark does.
                                (Long) conf.get(config.REDUCER_MAX_SIZE_IN_FLIGHT()) * 1024 * 1024,
                                (Integer) conf.get(config.REDUCER_MAX_REQS_IN_FLIGHT()),
                                (Integer) conf.get(config.REDUCER_MAX_BLOCKS_IN_FLIGHT_PER_ADDRESS()),
                                (Long) conf.get(config.MAX_REMOTE_BLOCK_SIZE_FETCH_TO_MEM()),
                                (Integer) conf.get(config.SHUFFLE_MAX_ATTEMPTS_ON_NETTY_OOM()),
                                (Boolean) conf.get(config.SHUFFLE_DETECT_CORRUPT()),
                                (Boolean) conf.get(config.SHUFFLE_DETECT_CORRUPT_MEMORY()),
                                (Boolean) conf.get(config.SHUFFLE_CHECKSUM_ENABLED()),
                                conf.get(config.SHUFFLE_CHECKSUM_ALGORITHM()),
                                readMetrics,
                                fetchContinuousBlocksInBatch(conf, dep),
                                new SystemClock())
                        .toCompletionIterator();

        SerializerInstance serializer = dep.serializer().newInstance();
        Iterator<Tuple2<Object, Object>> recordIter =
                wrappedStreams.flatMap(t -> serializer.deserializeStream(t._2()).asKeyValueIterator());
        Iterator<Tuple2<Object, Object>> counted = recordIter.map(record -> {
            readMetrics.incRecordsRead(1);
            return record;
        });
        Iterator<Tuple2<Object, Object>> metricIter = CompletionIterator$.MODULE$.apply(counted, () -> {
            context.taskMetrics().mergeShuffleReadMetrics();
            return BoxedUnit.UNIT;
        });
        InterruptibleIterator<Tuple2<Object, Object>> interruptible = new InterruptibleIterator<>(context, metricIter);

        Iterator result;
        Option<Aggregator<K, Object, C>> aggregator = (Option) dep.aggregator();
        RowBasedChecksum[] noChecksums = new RowBasedChecksum[0];
        if (dep.keyOrdering().isDefined()) {
            ExternalSorter sorter;
            if (aggregator.isDefined()) {
                if (dep.mapSideCombine()) {
                    Aggregator<K, Object, C> agg = aggregator.get();
                    Aggregator<K, C, C> combiners =
                            new Aggregator<>(c -> c, agg.mergeCombiners(), agg.mergeCombiners());
                    sorter = new ExternalSorter(
                            context,
                            Option.apply(combiners),
                            Option.empty(),
                            dep.keyOrdering(),
                            dep.serializer(),
                            noChecksums);
                } else {
                    sorter = new ExternalSorter(
                            context, aggregator, Option.empty(), dep.keyOrdering(), dep.serializer(), noChecksums);
                }
            } else {
                sorter = new ExternalSorter(
                        context, Option.empty(), Option.empty(), dep.keyOrdering(), dep.serializer(), noChecksums);
            }
            result = sorter.insertAllAndUpdateMetrics((Iterator) interruptible);
        } else if (aggregator.isDefined()) {
            if (dep.mapSideCombine()) {
                result = aggregator.get().combineCombinersByKey((Iterator) interruptible, context);
            } else {
                result = aggregator.get().combineValuesByKey((Iterator) interruptible, context);
            }
        } else {
            result = interruptible;
        }
        if (result instanceof InterruptibleIterator) {
            return result;
        }
        return new InterruptibleIterator<>(context, result);
    }
}

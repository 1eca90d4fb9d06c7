package org.ucx4j.spark;

import java.io.File;
import org.apache.spark.network.buffer.FileSegmentManagedBuffer;
import org.apache.spark.network.buffer.ManagedBuffer;
import org.apache.spark.network.shuffle.MergedBlockMeta;
import org.apache.spark.network.util.MapConfigProvider;
import org.apache.spark.network.util.TransportConf;
import org.apache.spark.shuffle.ShuffleBlockResolver;
import org.apache.spark.storage.BlockId;
import org.apache.spark.storage.ShuffleBlockId;
import org.apache.spark.storage.ShuffleMergedBlockId;
import scala.Option;

/**
 * A resolver for the block server's tests: map 0's data file holds blocks of 10 bytes each (block r =
 * bytes r*10..r*10+9; block 999999 is the whole file); map 9's blocks are in a file that does not exist.
 */
final class TenByteBlocks implements ShuffleBlockResolver {
    private static final TransportConf TRANSPORT = new TransportConf("shuffle", MapConfigProvider.EMPTY);

    private final File data;
    private final File gone;

    TenByteBlocks(File data, File gone) {
        this.data = data;
        this.gone = gone;
    }

    @Override
    public ManagedBuffer getBlockData(BlockId blockId, Option<String[]> dirs) {
        ShuffleBlockId id = (ShuffleBlockId) blockId;
        File file = id.mapId() == 9 ? gone : data;
        int length = id.reduceId() == 999_999 ? (int) data.length() : 10;
        long offset = id.reduceId() == 999_999 ? 0 : id.reduceId() * 10L;
        return new FileSegmentManagedBuffer(TRANSPORT, file, offset, length);
    }

    @Override
    public scala.collection.immutable.Seq<ManagedBuffer> getMergedBlockData(
            ShuffleMergedBlockId blockId, Option<String[]> dirs) {
        throw new UnsupportedOperationException();
    }

    @Override
    public MergedBlockMeta getMergedBlockMeta(ShuffleMergedBlockId blockId, Option<String[]> dirs) {
        throw new UnsupportedOperationException();
    }

    @Override
    public void stop() {}
}

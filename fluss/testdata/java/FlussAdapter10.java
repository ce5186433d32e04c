/* FlussAdapter for the fluss-client 1.0.0 jar (see FlussAdapter.java). */

import org.apache.fluss.config.Configuration;
import org.apache.fluss.memory.AbstractPagedOutputView;
import org.apache.fluss.metadata.Schema;
import org.apache.fluss.metadata.SchemaGetter;
import org.apache.fluss.metadata.TableInfo;
import org.apache.fluss.metadata.TablePath;
import org.apache.fluss.record.LogRecordBatchStatisticsCollector;
import org.apache.fluss.record.LogRecordReadContext;
import org.apache.fluss.record.MemoryLogRecordsArrowBuilder;
import org.apache.fluss.row.arrow.ArrowWriter;
import org.apache.fluss.types.RowType;

import java.util.Collections;
import java.util.List;

final class FlussAdapter10 implements FlussAdapter {

    public String line() {
        return "1.0";
    }

    public MemoryLogRecordsArrowBuilder appendOnlyArrowBuilder(int schemaId, ArrowWriter writer,
            AbstractPagedOutputView out) {
        // No statistics collector: the 1.0 client passes one only for tables with column
        // statistics enabled, and without one the batch keeps the magic-0 layout the gateway writes.
        return MemoryLogRecordsArrowBuilder.builder(schemaId, writer, out, true, null);
    }

    public boolean columnStatistics() {
        return true;
    }

    public MemoryLogRecordsArrowBuilder statisticsArrowBuilder(RowType rowType, int schemaId, ArrowWriter writer,
            AbstractPagedOutputView out) {
        // the client's RecordAccumulator: a collector over the table's statistics columns
        Configuration props = new Configuration();
        props.setString("table.statistics.columns", "*");
        TableInfo info = tableInfo(TablePath.of("db", "t"), 1, schemaId,
                Schema.newBuilder().fromRowType(rowType).build(), Collections.emptyList(), Collections.emptyList(), 1,
                props, new Configuration());
        return MemoryLogRecordsArrowBuilder.builder(schemaId, writer, out, true,
                new LogRecordBatchStatisticsCollector(info.getRowType(), info.getStatsIndexMapping()));
    }

    public LogRecordReadContext compactedReadContext(RowType rowType, int schemaId, SchemaGetter schemas) {
        // 1.0 resolves the schema of each batch through the getter, as for ARROW and INDEXED
        return LogRecordReadContext.createCompactedRowReadContext(rowType, schemaId, schemas);
    }

    public TableInfo tableInfo(TablePath path, long tableId, int schemaId, Schema schema, List<String> bucketKeys,
            List<String> partitionKeys, int numBuckets, Configuration properties, Configuration customProperties) {
        // 1.0 adds the table's remote data dir (null: the cluster default) before the comment
        return new TableInfo(path, tableId, schemaId, schema, bucketKeys, partitionKeys, numBuckets, properties,
                customProperties, null, null, 0, 0);
    }
}

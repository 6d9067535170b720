import time, cProfile, pstats, byoc
from benchmarks.bench_partition import alternating_chain
from byoc.transform.pass_infra import PassContext, PassTimingInstrument
mod = alternating_chain(2000)
byoc.partition_for("npu", alternating_chain(10))
ti = PassTimingInstrument()
with PassContext(instruments=[ti]):
    t=time.time(); byoc.partition_for("npu", mod); print(time.time()-t)
print(ti.render())
cProfile.run('byoc.partition_for("npu", mod)', '/tmp/prof')
p=pstats.Stats('/tmp/prof'); p.sort_stats('tottime').print_stats(15)
p.print_callers('post_order')

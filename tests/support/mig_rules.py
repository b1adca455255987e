"""Alarm definitions (an alarms/*.py file's text) that tests of clusters differing in exporter.mig share."""

# A rule per GPU on framebuffer used whose CloudWatch form is per MIG instance: where GPUs may be split its alarm reads
# MIG instances alone (a set naming GPU_I_PROFILE); in a cluster saying exporter.mig: none, the rule's own condition
# (render/alarms.cloudwatch_condition)
FB_PER_GPU_CLOUDWATCH_PER_INSTANCE = '''
from generator.model import Alarm, Condition, Query


def alarms(ctx):
    yield Alarm("gpu-fb-high", "GPU memory high",
                Condition(Query("DCGM_FI_DEV_FB_USED", "max", ("node", "gpu")), ">", 15000),
                cloudwatch=Condition(Query("DCGM_FI_DEV_FB_USED", "max", ("node", "gpu", "mig_instance")), ">",
                                     15000))
'''

import org.apache.parquet.column.values.bloomfilter.BlockSplitBloomFilter;
public class SizingGolden { public static void main(String[] a){
  long[] ndvs={0,1,10,100,200,256,300,1000,1337,5000,10000,26214,100000,1000000,10000000,100000000,999000000L};
  double[] fpps={0.01,0.05,0.001,0.1};
  for(double p:fpps) for(long n:ndvs){ int bits=BlockSplitBloomFilter.optimalNumOfBits(n,p);
    BlockSplitBloomFilter f=new BlockSplitBloomFilter(bits/8, 128*1024*1024);
    System.out.println(n+" "+p+" "+bits+" "+f.getBitsetSize()); }
  for(int b: new int[]{0,1,31,32,33,64,99,100,1000,4096,4097}) System.out.println("bytes "+b+" "+new BlockSplitBloomFilter(b, 128*1024*1024).getBitsetSize());
}}
